package promcompat

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"sync"

	remoteapi "github.com/prometheus/client_golang/exp/api/remote"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/prometheus/model/exemplar"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/metadata"
	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/storage/remote"
	"github.com/prometheus/prometheus/tsdb"
)

// exemplarAppenderV2 is the method set of storage.ExemplarAppenderV2
// (v0.316.0 on).
type exemplarAppenderV2 interface {
	AppendExemplars(ref storage.SeriesRef, ls labels.Labels, es []exemplar.Exemplar) (storage.SeriesRef, error)
}

// HasExemplarAppenderV2 reports whether app has AppendExemplars, the
// method of storage.ExemplarAppenderV2, which Prometheus's head has from
// v0.316.0 on.
func HasExemplarAppenderV2(app storage.AppenderV2) bool {
	_, ok := app.(exemplarAppenderV2)
	return ok
}

// WriteHandlerTakesV2 reports whether remote.NewWriteHandler of the
// release in use takes a storage.AppendableV2 (v0.316.0 on), rather than
// the storage.Appendable of the releases before.
func WriteHandlerTakesV2() bool {
	return reflect.TypeOf(remote.NewWriteHandler).In(2) == reflect.TypeFor[storage.AppendableV2]()
}

// Appendable is what [NewWriteHandler] needs of a storage: both appender
// interfaces, as a *tsdb.DB has them, so that it can give each release's
// handler the one it takes.
type Appendable interface {
	storage.Appendable
	storage.AppendableV2
}

// NewWriteHandler returns remote.NewWriteHandler of the release in use over
// db: with db's storage.Appendable and ingestSTZeroSample false up to
// v0.315, with its storage.AppendableV2 from v0.316.0 on.
func NewWriteHandler(logger *slog.Logger, reg prometheus.Registerer, db Appendable, accepted remoteapi.MessageTypes, enableTypeAndUnitLabels, appendMetadata bool) http.Handler {
	fn := reflect.ValueOf(remote.NewWriteHandler)
	t := fn.Type()
	args := []reflect.Value{
		reflect.ValueOf(&logger).Elem(),
		reflect.ValueOf(&reg).Elem(),
	}
	if WriteHandlerTakesV2() {
		var a storage.AppendableV2 = db
		args = append(args, reflect.ValueOf(&a).Elem(), reflect.ValueOf(accepted))
	} else {
		var a storage.Appendable = db
		args = append(args, reflect.ValueOf(&a).Elem(), reflect.ValueOf(accepted), reflect.ValueOf(false))
	}
	args = append(args, reflect.ValueOf(enableTypeAndUnitLabels), reflect.ValueOf(appendMetadata))
	if len(args) != t.NumIn() {
		panic(fmt.Sprintf("promcompat: remote.NewWriteHandler has %d parameters, not %d", t.NumIn(), len(args)))
	}
	return fn.Call(args)[0].Interface().(http.Handler)
}

// NewCircularExemplarStorage returns tsdb.NewCircularExemplarStorage of
// the release in use, of the given length and out-of-order time window.
// Before v0.310.0 the storage has no window: a window other than zero is an
// error then.
func NewCircularExemplarStorage(length int64, m *tsdb.ExemplarMetrics, oooTimeWindow int64) (tsdb.ExemplarStorage, error) {
	fn := reflect.ValueOf(tsdb.NewCircularExemplarStorage)
	args := []reflect.Value{reflect.ValueOf(length), reflect.ValueOf(m)}
	switch fn.Type().NumIn() {
	case 2:
		if oooTimeWindow != 0 {
			return nil, fmt.Errorf("promcompat: this Prometheus's exemplar storage has no out-of-order time window (%d ms asked)", oooTimeWindow)
		}
	case 3:
		args = append(args, reflect.ValueOf(oooTimeWindow))
	default:
		panic(fmt.Sprintf("promcompat: tsdb.NewCircularExemplarStorage has %d parameters", fn.Type().NumIn()))
	}
	out := fn.Call(args)
	err, _ := out[1].Interface().(error)
	if err != nil {
		return nil, err
	}
	return out[0].Interface().(tsdb.ExemplarStorage), nil
}

// ExemplarsOutOfOrder reports whether the exemplar storage of the release
// in use has an out-of-order time window (v0.310.0 on).
func ExemplarsOutOfOrder() bool {
	return reflect.TypeOf(tsdb.NewCircularExemplarStorage).NumIn() == 3
}

// SetOutOfOrderTimeWindow sets the out-of-order time window of es, an
// exemplar storage of [NewCircularExemplarStorage], and reports whether it
// could: the storage has no window before v0.310.0.
func SetOutOfOrderTimeWindow(es tsdb.ExemplarStorage, d int64) bool {
	w, ok := es.(interface{ SetOutOfOrderTimeWindow(int64) })
	if ok {
		w.SetOutOfOrderTimeWindow(d)
	}
	return ok
}

// FromIntHistogram returns writev2.FromIntHistogram of the release in use,
// with start timestamp st: passed to it from v0.316.0 on, set in the
// result's StartTimestamp before.
func FromIntHistogram(st, t int64, h *histogram.Histogram) writev2.Histogram {
	return fromHistogram(reflect.ValueOf(writev2.FromIntHistogram), st, t, reflect.ValueOf(h))
}

// FromFloatHistogram is [FromIntHistogram] for writev2.FromFloatHistogram.
func FromFloatHistogram(st, t int64, fh *histogram.FloatHistogram) writev2.Histogram {
	return fromHistogram(reflect.ValueOf(writev2.FromFloatHistogram), st, t, reflect.ValueOf(fh))
}

func fromHistogram(fn reflect.Value, st, t int64, h reflect.Value) writev2.Histogram {
	switch fn.Type().NumIn() {
	case 2:
		out := fn.Call([]reflect.Value{reflect.ValueOf(t), h})[0].Interface().(writev2.Histogram)
		out.StartTimestamp = st
		return out
	case 3:
		return fn.Call([]reflect.Value{reflect.ValueOf(st), reflect.ValueOf(t), h})[0].Interface().(writev2.Histogram)
	}
	panic(fmt.Sprintf("promcompat: %v has %d parameters", fn.Type(), fn.Type().NumIn()))
}

// ErrMetadataRef is returned by [ToMetadata] when the release in use
// panics on a metadata reference outside the symbols table (before
// v0.312.0), where later releases return an error.
var ErrMetadataRef = fmt.Errorf("promcompat: metadata reference outside of the symbols table")

// ToMetadata returns ts.ToMetadata(symbols) of the release in use. Before
// v0.312.0 it returns only the metadata, and panics on a reference outside
// symbols: ToMetadata recovers and returns [ErrMetadataRef] then, as later
// releases return an error.
func ToMetadata(ts writev2.TimeSeries, symbols []string) (m metadata.Metadata, err error) {
	method := reflect.ValueOf(ts).MethodByName("ToMetadata")
	defer func() {
		if r := recover(); r != nil {
			m, err = metadata.Metadata{}, fmt.Errorf("%w: %v", ErrMetadataRef, r)
		}
	}()
	out := method.Call([]reflect.Value{reflect.ValueOf(symbols)})
	m = out[0].Interface().(metadata.Metadata)
	if len(out) == 2 {
		err, _ = out[1].Interface().(error)
	}
	return m, err
}

// snappyBodyLimit is the limit remoteapi.SnappyDecodeMiddleware puts on a
// body: 32 MiB, in the client_golang/exp of 2026 on.
const snappyBodyLimit = 32 << 20

// SnappyMiddlewareLimitsBody reports whether the snappy middleware of
// remoteapi (client_golang/exp), in front of every remote.NewWriteHandler,
// answers 413 to a body over 32 MiB, as it does from its 2026 versions on;
// the version Prometheus v0.309.1 requires reads a body of any size. It
// finds out by sending the middleware one such body, once per process.
func SnappyMiddlewareLimitsBody() bool { return limitsBody() }

var limitsBody = sync.OnceValue(func() bool {
	h := remoteapi.SnappyDecodeMiddleware(slog.New(slog.DiscardHandler))(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	req := httptest.NewRequest(http.MethodPost, "/", io.LimitReader(zeros{}, snappyBodyLimit+1))
	req.Header.Set("Content-Encoding", "snappy")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Code == http.StatusRequestEntityTooLarge
})

// zeros is an io.Reader of zero bytes without end.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// MetadataRefsChecked reports whether writev2.TimeSeries.ToMetadata of the
// release in use returns an error for a reference outside the symbols
// table (v0.312.0 on), rather than panicking, as the handler's does then.
func MetadataRefsChecked() bool {
	return reflect.TypeFor[writev2.TimeSeries]().Method(toMetadataIndex()).Type.NumOut() == 2
}

func toMetadataIndex() int {
	m, ok := reflect.TypeFor[writev2.TimeSeries]().MethodByName("ToMetadata")
	if !ok {
		panic("promcompat: writev2.TimeSeries has no ToMetadata")
	}
	return m.Index
}
