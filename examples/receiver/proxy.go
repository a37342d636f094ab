package main

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ingestkit/ingestkit/ingest"
)

// Tenant IDs come from a request header that any client can set: the
// receiver does not authenticate. Thanos and Mimir leave that to a proxy in
// front (an authenticating gateway), which authenticates the client and
// states the tenant. -tenant-proxy-header names the header in which that
// proxy states it, and -tenant-proxy-networks the addresses the proxy
// connects from, so that a client that reaches the port around the proxy
// is refused. The tenant header (-tenant-header) stays as it is: a request
// may name its tenant there, which must then be the one the proxy states,
// and a request that names none is the proxy's tenant's, not the default
// tenant's.

// Errors of the trusted proxy's checks.
var (
	errNotFromProxy  = fmt.Errorf("%w: not from a trusted proxy (-tenant-proxy-networks)", ingest.ErrTenantForbidden)
	errNoProxyTenant = errors.New("no tenant stated by the authenticating proxy")
	errProxyMismatch = fmt.Errorf("%w: the tenant header names another tenant than the authenticating proxy states", ingest.ErrTenantForbidden)
)

// trustedProxy checks remote-write requests against what the proxy in
// front states. A nil *trustedProxy checks nothing. It is safe for
// concurrent use by multiple goroutines.
type trustedProxy struct {
	header       string         // -tenant-proxy-header, canonical; empty: none
	tenantHeader string         // -tenant-header
	networks     []netip.Prefix // -tenant-proxy-networks; none: any address
	logger       *slog.Logger
	refused      *prometheus.CounterVec // by reason
}

// newTrustedProxy returns the checks of the flags, nil if neither is set.
// networks is a comma-separated list of CIDR prefixes or addresses.
func newTrustedProxy(header, networks, tenantHeader string, logger *slog.Logger) (*trustedProxy, error) {
	if header == "" && networks == "" {
		return nil, nil
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	p := &trustedProxy{
		header:       http.CanonicalHeaderKey(header),
		tenantHeader: cmp.Or(tenantHeader, ingest.DefaultTenantHeader),
		logger:       logger,
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: metricsPrefix + "proxy_refused_requests_total",
			Help: "Remote-write requests refused by the checks of -tenant-proxy-header and -tenant-proxy-networks, by reason.",
		}, []string{"reason"}),
	}
	if p.header != "" && strings.EqualFold(p.header, p.tenantHeader) {
		return nil, fmt.Errorf("-tenant-proxy-header %s: the same header as -tenant-header, which clients set", header)
	}
	for n := range strings.SplitSeq(networks, ",") {
		if n = strings.TrimSpace(n); n == "" {
			continue
		}
		prefix, err := netip.ParsePrefix(n)
		if err != nil {
			addr, aerr := netip.ParseAddr(n)
			if aerr != nil {
				return nil, fmt.Errorf("-tenant-proxy-networks: %q is neither a CIDR prefix nor an address", n)
			}
			prefix = netip.PrefixFrom(addr, addr.BitLen())
		}
		p.networks = append(p.networks, prefix.Masked())
	}
	for _, reason := range []string{"network", "missing", "invalid", "mismatch"} {
		p.refused.WithLabelValues(reason)
	}
	return p, nil
}

// collectors returns the proxy's metrics, none for a nil *trustedProxy.
func (p *trustedProxy) collectors() []prometheus.Collector {
	if p == nil {
		return nil
	}
	return []prometheus.Collector{p.refused}
}

// wrap returns h behind the proxy's checks, h itself for a nil
// *trustedProxy. A request from outside -tenant-proxy-networks is answered
// 403; with -tenant-proxy-header, a request without exactly one valid
// tenant ID in it 401, and one whose tenant header names another tenant
// 403. Otherwise h serves it, with the tenant header set to the proxy's
// tenant when the request named none. Nothing is read or opened before.
func (p *trustedProxy) wrap(h http.Handler) http.Handler {
	if p == nil {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if code, reason, err := p.check(req); err != nil {
			p.refused.WithLabelValues(reason).Inc()
			p.logger.Warn("remote-write request rejected", "code", code, "remote", req.RemoteAddr, "err", err)
			http.Error(w, err.Error(), code)
			return
		}
		h.ServeHTTP(w, req)
	})
}

// check returns the status, the metric's reason and the error of a request
// the checks refuse, or a nil error; it sets the tenant header of a
// request that names no tenant to the proxy's.
func (p *trustedProxy) check(req *http.Request) (code int, reason string, err error) {
	if len(p.networks) > 0 && !p.fromProxy(req.RemoteAddr) {
		return http.StatusForbidden, "network", errNotFromProxy
	}
	if p.header == "" {
		return 0, "", nil
	}
	vs := req.Header.Values(p.header)
	if len(vs) != 1 || vs[0] == "" {
		return http.StatusUnauthorized, "missing", fmt.Errorf("%w: want one %s header, the request has %d (-tenant-proxy-header)", errNoProxyTenant, p.header, len(vs))
	}
	if err := ingest.ValidTenantID(vs[0]); err != nil {
		return http.StatusUnauthorized, "invalid", fmt.Errorf("%s header: %w", p.header, err)
	}
	switch named := req.Header.Values(p.tenantHeader); {
	case len(named) == 0 || len(named) == 1 && named[0] == "":
		req.Header.Set(p.tenantHeader, vs[0])
	case len(named) > 1 || named[0] != vs[0]:
		return http.StatusForbidden, "mismatch", fmt.Errorf("%w (%s %.64q, %s %q)", errProxyMismatch, p.tenantHeader, named[0], p.header, vs[0])
	}
	return 0, "", nil
}

// fromProxy reports whether remote, a request's RemoteAddr, is in the
// proxy's networks.
func (p *trustedProxy) fromProxy(remote string) bool {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		host = remote
	}
	addr, err := netip.ParseAddr(host)
	if err != nil {
		return false
	}
	addr = addr.Unmap()
	for _, n := range p.networks {
		if n.Contains(addr) {
			return true
		}
	}
	return false
}
