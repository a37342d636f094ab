package ingest

import "errors"

// Errors of the write path's own limits and of its tenants. Each doc says
// what a [WriteHandler] or [TenantWriteHandler] answers; the other errors
// it answers with are Prometheus's, as its handler gives them.
var (
	// ErrTooManyLabels is reported for a series with more labels than
	// [Options.MaxLabelsPerSeries]: the series is skipped and the request
	// answered 400 once the rest is written, in both protocol versions.
	ErrTooManyLabels = errors.New("ingest: series has more labels than the limit")

	// ErrLabelTooLong is reported for a series with a label name or value
	// longer than [Options.MaxLabelNameLength] or
	// [Options.MaxLabelValueLength], or longer than the labels build in
	// use can hold (16 MiB in the default stringlabels build, whose
	// labels.ScratchBuilder panics beyond): skipped, 400, as
	// ErrTooManyLabels.
	ErrLabelTooLong = errors.New("ingest: label name or value longer than the limit")

	// ErrSeriesLimit is reported for a series new to the handler refused
	// because its storage has [Options.MaxSeries] active series: skipped,
	// 400, as Mimir answers its per-tenant series limit.
	ErrSeriesLimit = errors.New("ingest: series limit exceeded")

	// ErrSeriesBudget is reported for a series new to its storage refused
	// because the [SeriesBudget] it shares with other handlers is spent:
	// skipped, 400, as for ErrSeriesLimit.
	ErrSeriesBudget = errors.New("ingest: series budget of the storages spent")

	// ErrInvalidTenant is returned for a tenant header that is not a valid
	// tenant ID (see [ValidTenantID]), or that a request repeats: answered
	// 400, before anything is read or opened.
	ErrInvalidTenant = errors.New("ingest: invalid tenant ID")

	// ErrTenantUnavailable is what a [TenantStorage] wraps when it cannot
	// serve a tenant now but may later (too many tenants open, shutting
	// down): answered 503, which Prometheus's sender retries.
	ErrTenantUnavailable = errors.New("ingest: tenant unavailable")

	// ErrTenantForbidden is what a [TenantStorage] wraps when a tenant is
	// not allowed to write: answered 403, which Prometheus's sender does
	// not retry.
	ErrTenantForbidden = errors.New("ingest: tenant not allowed")
)
