// Package faultproxy is an HTTP reverse proxy for the SQS JSON protocol
// that injects faults: throttling errors, 500/503, connection resets
// (before or after the request reached the server), slow responses, and
// per-entry failures inside SendMessageBatch / DeleteMessageBatch. Tests put
// it in front of local-aws-sqs to check that dlqctl's accounting stays exact
// when SQS misbehaves.
//
// Faults match on the action named by the X-Amz-Target header
// ("AmazonSQS.SendMessageBatch") and fire deterministically on every Every-th
// matching request, at most Limit times.
package faultproxy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Kinds of fault.
const (
	Throttle    = "throttle"     // 400 ThrottlingException (retryable)
	Status500   = "500"          // 500 InternalFailure
	Status503   = "503"          // 503 ServiceUnavailable
	ResetBefore = "reset-before" // close the connection without forwarding
	ResetAfter  = "reset-after"  // forward, then close without answering: the call took effect but the client cannot know
	Slow        = "slow"         // wait Delay, then forward
	EntryFail   = "entry-fail"   // remove every EntryEvery-th entry from a batch request and report it failed
)

// Fault is one injection rule.
type Fault struct {
	Action string // e.g. "SendMessageBatch"; "" matches every action
	Kind   string
	Every  int // fire on every Every-th matching request (default 1)
	Limit  int // fire at most Limit times (0 = no limit)
	Delay  time.Duration
	// EntryEvery: with EntryFail, fail entries 0, EntryEvery, 2·EntryEvery…
	// of the batch (default 1: all entries).
	EntryEvery int
	// EntryCode and EntrySenderFault are the reported failure (default
	// "InternalError", not the sender's fault: retryable).
	EntryCode        string
	EntrySenderFault bool

	seen, fired int
}

// Stats count what the proxy did.
type Stats struct {
	Requests map[string]int // by action
	Fired    map[string]int // by kind
	// UnansweredEntries is the number of SendMessageBatch entries forwarded
	// to the server whose response was dropped (ResetAfter): each may exist
	// at the server although the client saw an error.
	UnansweredSendEntries int
	// FailedEntries is the number of batch entries reported failed.
	FailedEntries int
}

// Proxy is a running fault proxy.
type Proxy struct {
	URL string

	srv    *httptest.Server
	target *url.URL
	rp     *httputil.ReverseProxy

	mu     sync.Mutex
	faults []*Fault
	stats  Stats
}

// New starts a proxy to target (the SQS endpoint URL).
func New(target string, faults ...Fault) (*Proxy, error) {
	u, err := url.Parse(target)
	if err != nil {
		return nil, err
	}
	p := &Proxy{target: u, stats: Stats{Requests: map[string]int{}, Fired: map[string]int{}}}
	for _, f := range faults {
		f := f
		if f.Every <= 0 {
			f.Every = 1
		}
		p.faults = append(p.faults, &f)
	}
	p.rp = httputil.NewSingleHostReverseProxy(u)
	p.srv = httptest.NewServer(http.HandlerFunc(p.serve))
	p.URL = p.srv.URL
	return p, nil
}

// Close stops the proxy.
func (p *Proxy) Close() { p.srv.CloseClientConnections(); p.srv.Close() }

// SetFaults replaces the fault rules (e.g. to stop injecting).
func (p *Proxy) SetFaults(faults ...Fault) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.faults = nil
	for _, f := range faults {
		f := f
		if f.Every <= 0 {
			f.Every = 1
		}
		p.faults = append(p.faults, &f)
	}
}

// Stats returns a copy of the counters.
func (p *Proxy) Stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.stats
	s.Requests, s.Fired = map[string]int{}, map[string]int{}
	for k, v := range p.stats.Requests {
		s.Requests[k] = v
	}
	for k, v := range p.stats.Fired {
		s.Fired[k] = v
	}
	return s
}

func (p *Proxy) pick(action string) *Fault {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stats.Requests[action]++
	for _, f := range p.faults {
		if f.Action != "" && f.Action != action {
			continue
		}
		if f.Limit > 0 && f.fired >= f.Limit {
			continue
		}
		f.seen++
		if f.seen%f.Every != 0 {
			continue
		}
		f.fired++
		p.stats.Fired[f.Kind]++
		cp := *f
		return &cp
	}
	return nil
}

func (p *Proxy) serve(w http.ResponseWriter, r *http.Request) {
	action := r.Header.Get("X-Amz-Target")
	if i := strings.LastIndexByte(action, '.'); i >= 0 {
		action = action[i+1:]
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	f := p.pick(action)
	if f == nil {
		p.forward(w, r, body)
		return
	}
	switch f.Kind {
	case Throttle:
		writeError(w, http.StatusBadRequest, "ThrottlingException", "Rate exceeded (injected)", "Sender")
	case Status500:
		writeError(w, http.StatusInternalServerError, "InternalFailure", "injected 500", "Receiver")
	case Status503:
		writeError(w, http.StatusServiceUnavailable, "ServiceUnavailable", "injected 503", "Receiver")
	case ResetBefore:
		reset(w)
	case ResetAfter:
		rec := httptest.NewRecorder()
		p.forward(rec, r, body)
		if action == "SendMessageBatch" {
			var in struct{ Entries []json.RawMessage }
			_ = json.Unmarshal(body, &in)
			p.mu.Lock()
			p.stats.UnansweredSendEntries += len(in.Entries)
			p.mu.Unlock()
		}
		reset(w)
	case Slow:
		time.Sleep(f.Delay)
		p.forward(w, r, body)
	case EntryFail:
		p.entryFail(w, r, body, f)
	default:
		p.forward(w, r, body)
	}
}

func (p *Proxy) forward(w http.ResponseWriter, r *http.Request, body []byte) {
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	r.Header.Set("Content-Length", strconv.Itoa(len(body)))
	p.rp.ServeHTTP(w, r)
}

func reset(w http.ResponseWriter) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		panic("faultproxy: connection cannot be hijacked")
	}
	conn, _, err := hj.Hijack()
	if err == nil {
		conn.Close()
	}
}

func writeError(w http.ResponseWriter, status int, code, msg, fault string) {
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	w.Header().Set("x-amzn-query-error", code+";"+fault)
	w.WriteHeader(status)
	b, _ := json.Marshal(map[string]string{"__type": "com.amazonaws.sqs#" + code, "message": msg})
	w.Write(b)
}

// entryFail removes every EntryEvery-th entry from a batch request,
// forwards the rest, and adds the removed ones to the response's Failed list.
func (p *Proxy) entryFail(w http.ResponseWriter, r *http.Request, body []byte, f *Fault) {
	var in map[string]json.RawMessage
	var entries []map[string]any
	if json.Unmarshal(body, &in) != nil || json.Unmarshal(in["Entries"], &entries) != nil || len(entries) == 0 {
		p.forward(w, r, body)
		return
	}
	every := max(f.EntryEvery, 1)
	var keep, drop []map[string]any
	for i, e := range entries {
		if i%every == 0 {
			drop = append(drop, e)
		} else {
			keep = append(keep, e)
		}
	}
	code := f.EntryCode
	if code == "" {
		code = "InternalError"
	}
	failed := make([]map[string]any, len(drop))
	for i, e := range drop {
		failed[i] = map[string]any{"Id": e["Id"], "Code": code, "Message": "injected entry failure", "SenderFault": f.EntrySenderFault}
	}
	p.mu.Lock()
	p.stats.FailedEntries += len(drop)
	p.mu.Unlock()
	var out map[string]any
	if len(keep) > 0 {
		in["Entries"], _ = json.Marshal(keep)
		nb, _ := json.Marshal(in)
		rec := httptest.NewRecorder()
		p.forward(rec, r, nb)
		if rec.Code != http.StatusOK {
			copyResponse(w, rec)
			return
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil {
			copyResponse(w, rec)
			return
		}
	} else {
		out = map[string]any{"Successful": []any{}}
	}
	prev, _ := out["Failed"].([]any)
	for _, fe := range failed {
		prev = append(prev, fe)
	}
	out["Failed"] = prev
	b, _ := json.Marshal(out)
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(http.StatusOK)
	w.Write(b)
}

func copyResponse(w http.ResponseWriter, rec *httptest.ResponseRecorder) {
	for k, v := range rec.Header() {
		w.Header()[k] = v
	}
	w.WriteHeader(rec.Code)
	w.Write(rec.Body.Bytes())
}

// String summarises the stats.
func (s Stats) String() string {
	return fmt.Sprintf("requests %v, fired %v, unanswered send entries %d, failed entries %d", s.Requests, s.Fired, s.UnansweredSendEntries, s.FailedEntries)
}
