// Package faultproxy is an HTTP reverse proxy for the SQS JSON protocol
// that injects faults: throttling errors, 500/503, connection resets
// (before or after the request reached the server), answers lost after the
// server acted, network latency, slow responses, and per-entry failures
// inside SendMessageBatch / DeleteMessageBatch, and queue counts that trail
// the truth (SetCountLag, see countlag.go). Tests put it in front of
// local-aws-sqs or moto_server to check that dlqctl's accounting stays exact
// when SQS misbehaves or is far away.
//
// Faults match on the action named by the X-Amz-Target header, which is how
// aws-sdk-go-v2 speaks the SQS JSON protocol to AWS, local-aws-sqs and moto
// alike ("X-Amz-Target: AmazonSQS.SendMessageBatch", body
// application/x-amz-json-1.0); a Query-protocol request (form body
// "Action=...") is matched by its Action, though EntryFail and the
// lost-message counters understand JSON only. A fault fires
// deterministically on every Every-th matching request, at most Limit
// times; the first matching rule wins, except Latency rules, which add
// their delay on top of whatever else happens to the request.
//
// Everything else passes through untouched: the proxy forwards the request
// line, headers (Host and Authorization included, so SigV4 signatures and
// moto's routing by credential scope still work) and body as received, adds
// no X-Forwarded-* header and asks for no compression; the response's status,
// headers and body come back as the server wrote them. Only hop-by-hop
// headers (Connection, Keep-Alive, ...) are per connection, as in any proxy.
//
// # Lost answers and the SDK's retryer
//
// Status500After (and the LostReceives helper) forwards the request, lets the
// server act on it, then answers 500 InternalFailure: the call reached SQS
// but its answer was lost. aws-sdk-go-v2's standard retryer treats a 500 as
// retryable, so with default settings (3 attempts, exponential jitter
// backoff, retry token bucket) the caller never sees the error: the retried
// ReceiveMessage simply returns other messages (or none), and the messages
// handed out in the lost answer stay in flight, invisible to everyone, until
// their visibility timeout expires; then they come back with
// ApproximateReceiveCount one higher. Only the response's retry metadata
// (retry.GetAttemptResults: more than one attempt) tells the caller that
// this may have happened. For SendMessage(Batch) the
// retry sends the messages again (duplicates on a standard queue; a FIFO
// queue drops them by deduplication id within 5 minutes). ResetAfter has
// the same effect at the server, but the client sees a connection error
// (also retried by the SDK). Stats.LostReceivedMessages and
// UnansweredSendEntries count what the server did that the client never
// learned. TestLostReceiveWithTheSDKRetryer pins this behaviour.
//
// Stats and SetFaults are safe for concurrent use; requests are served
// concurrently, each sleeping its own Latency/Slow delay.
package faultproxy

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"net"
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
	// Status500After forwards the request (it takes effect: a
	// ReceiveMessage hides its messages, a send enqueues), then answers the
	// client 500 InternalFailure instead of the real response. See
	// LostReceives and the package comment for what the SDK then does.
	Status500After = "500-after"
	// Latency adds network delay to every matching request without
	// excluding other faults: half of Delay (plus a random share of
	// Jitter) before the request is handled, the rest before the first
	// byte of the response, so a server-side effect happens mid-way as on a
	// real link. Concurrent requests sleep independently.
	Latency = "latency"
	// BadCredentials answers, without forwarding, as AWS does when it
	// does not know the request's access key (400
	// UnrecognizedClientException, InvalidClientTokenId in the query
	// error header): the emulators accept any credentials.
	BadCredentials = "bad-credentials"
)

// LostReceives returns a rule that loses the answer of every every-th
// ReceiveMessage (at most limit times, 0 = no limit) after the server
// handed its messages out: "the receive reached SQS but its answer was lost".
func LostReceives(every, limit int) Fault {
	return Fault{Action: "ReceiveMessage", Kind: Status500After, Every: every, Limit: limit}
}

// Fault is one injection rule.
type Fault struct {
	Action string // e.g. "SendMessageBatch"; "" matches every action
	Kind   string
	Every  int // fire on every Every-th matching request (default 1)
	Limit  int // fire at most Limit times (0 = no limit)
	Delay  time.Duration
	// Jitter, with Latency: a random extra delay in [0, Jitter) per request.
	Jitter time.Duration
	// EntryEvery: with EntryFail, fail entries 0, EntryEvery, 2·EntryEvery…
	// of the batch (default 1: all entries).
	EntryEvery int
	// EntryCode and EntrySenderFault are the reported failure (default
	// "InternalError", not the sender's fault: retryable).
	EntryCode        string
	EntrySenderFault bool
	// EntryBodyContains, with EntryFail, fails only the entries whose
	// MessageBody contains it (instead of EntryEvery).
	EntryBodyContains string

	seen, fired int
}

// Stats count what the proxy did.
type Stats struct {
	Requests map[string]int // by action
	Fired    map[string]int // by kind
	// UnansweredSendEntries is the number of SendMessageBatch entries (and
	// SendMessage calls) forwarded to the server whose response was dropped
	// (ResetAfter, Status500After): each may exist at the server although
	// the client saw an error.
	UnansweredSendEntries int
	// LostReceivedMessages is the number of messages the server handed out
	// in ReceiveMessage responses that the client never got (ResetAfter,
	// Status500After): they stay in flight until their visibility timeout.
	LostReceivedMessages int
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
	calls  []Call

	lag countLag
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
	p.rp = newReverseProxy(u)
	p.srv = httptest.NewServer(http.HandlerFunc(p.serve))
	p.URL = p.srv.URL
	return p, nil
}

// Close stops the proxy.
func (p *Proxy) Close() { p.stopCountPolls(); p.srv.CloseClientConnections(); p.srv.Close() }

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

// ResetStats zeroes the counters (the faults keep their state).
func (p *Proxy) ResetStats() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stats = Stats{Requests: map[string]int{}, Fired: map[string]int{}}
	p.calls = nil
}

// newReverseProxy forwards to target without changing the request: the
// Host header stays what the client signed, no X-Forwarded-For is added (a
// Director-based proxy would add one), and the transport neither asks for
// gzip nor decompresses, so the response bytes are the server's.
func newReverseProxy(target *url.URL) *httputil.ReverseProxy {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.Proxy = nil
	tr.DisableCompression = true
	tr.MaxIdleConnsPerHost = 256
	return &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			pr.Out.Host = pr.In.Host
		},
		Transport: tr,
		// Abandoned long polls are expected; their cancellations are not
		// news.
		ErrorLog: log.New(io.Discard, "", 0),
	}
}

// pick counts the request and returns the first matching non-latency fault
// (nil: none) and the sum of the matching Latency rules' delays.
func (p *Proxy) pick(action string) (*Fault, time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stats.Requests[action]++
	var picked *Fault
	var lat time.Duration
	for _, f := range p.faults {
		if f.Action != "" && f.Action != action {
			continue
		}
		if f.Limit > 0 && f.fired >= f.Limit {
			continue
		}
		if picked != nil && f.Kind != Latency {
			continue
		}
		f.seen++
		if f.seen%f.Every != 0 {
			continue
		}
		f.fired++
		p.stats.Fired[f.Kind]++
		if f.Kind == Latency {
			lat += f.Delay
			if f.Jitter > 0 {
				lat += rand.N(f.Jitter)
			}
			continue
		}
		cp := *f
		picked = &cp
	}
	return picked, lat
}

// actionOf names the action: X-Amz-Target "AmazonSQS.ReceiveMessage" (JSON
// protocols: SQS, CloudWatch Logs), else the form body's Action (Query
// protocol), else the S3 operation.
func actionOf(r *http.Request, body []byte) string {
	if action := r.Header.Get("X-Amz-Target"); action != "" {
		if i := strings.LastIndexByte(action, '.'); i >= 0 {
			action = action[i+1:]
		}
		return action
	}
	if strings.HasPrefix(r.Header.Get("Content-Type"), "application/x-www-form-urlencoded") {
		if v, err := url.ParseQuery(string(body)); err == nil {
			return v.Get("Action")
		}
	}
	if a := r.URL.Query().Get("Action"); a != "" {
		return a
	}
	return s3Op(r)
}

// s3Op names an S3 REST operation (path-style requests, as dlqctl's tests
// send them): the SDK's ?x-id=Op where it adds one, else from the method,
// the path (bucket, or bucket and key) and the query.
func s3Op(r *http.Request) string {
	q := r.URL.Query()
	if id := q.Get("x-id"); id != "" {
		return id
	}
	bucket, key, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	if bucket == "" {
		if r.Method == http.MethodGet {
			return "ListBuckets"
		}
		return ""
	}
	switch r.Method {
	case http.MethodHead:
		if key == "" {
			return "HeadBucket"
		}
		return "HeadObject"
	case http.MethodGet:
		switch {
		case key != "":
			return "GetObject"
		case q.Get("list-type") == "2":
			return "ListObjectsV2"
		case q.Has("location"):
			return "GetBucketLocation"
		}
		return "ListObjects"
	case http.MethodPut:
		switch {
		case key == "":
			return "CreateBucket"
		case r.Header.Get("X-Amz-Copy-Source") != "":
			return "CopyObject"
		case q.Has("uploadId"):
			return "UploadPart"
		}
		return "PutObject"
	case http.MethodDelete:
		if key == "" {
			return "DeleteBucket"
		}
		return "DeleteObject"
	case http.MethodPost:
		switch {
		case q.Has("uploads"):
			return "CreateMultipartUpload"
		case q.Has("uploadId"):
			return "CompleteMultipartUpload"
		case q.Has("delete"):
			return "DeleteObjects"
		}
	}
	return ""
}

// sleep waits d or until the client goes away; false: it went away.
func sleep(r *http.Request, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-r.Context().Done():
		return false
	}
}

func (p *Proxy) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	action := actionOf(r, body)
	p.logCall(action, r, body)
	f, lat := p.pick(action)
	if lat > 0 {
		// Half on the way in, half on the way out.
		if !sleep(r, lat/2) {
			return
		}
		w = &delayedWriter{ResponseWriter: w, r: r, delay: lat - lat/2}
	}
	if f == nil {
		if action == "GetQueueAttributes" && p.countLagOn() && p.serveLaggedCounts(w, r, body) {
			return
		}
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
		p.countLost(action, body, rec)
		reset(w)
	case Status500After:
		rec := httptest.NewRecorder()
		p.forward(rec, r, body)
		p.countLost(action, body, rec)
		writeError(w, http.StatusInternalServerError, "InternalFailure", "injected 500 after the server acted", "Receiver")
	case Slow:
		if sleep(r, f.Delay) {
			p.forward(w, r, body)
		}
	case EntryFail:
		p.entryFail(w, r, body, f)
	case Deny:
		writeDenied(w, r, action)
	case BadCredentials:
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		w.Header().Set("x-amzn-query-error", "InvalidClientTokenId;Sender")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write([]byte(`{"__type":"com.amazon.coral.service#UnrecognizedClientException","message":"The security token included in the request is invalid."}`))
	default:
		p.forward(w, r, body)
	}
}

// countLost records what the server did for a request whose answer the
// client will not get.
func (p *Proxy) countLost(action string, body []byte, rec *httptest.ResponseRecorder) {
	var sent, received int
	switch action {
	case "SendMessageBatch":
		var in struct{ Entries []json.RawMessage }
		_ = json.Unmarshal(body, &in)
		sent = len(in.Entries)
	case "SendMessage":
		sent = 1
	case "ReceiveMessage":
		if rec.Code == http.StatusOK {
			var out struct{ Messages []json.RawMessage }
			_ = json.Unmarshal(rec.Body.Bytes(), &out)
			received = len(out.Messages)
		}
	}
	p.mu.Lock()
	p.stats.UnansweredSendEntries += sent
	p.stats.LostReceivedMessages += received
	p.mu.Unlock()
}

// delayedWriter holds the response back by delay (the return leg of
// Latency) before its first byte, or before a reset.
type delayedWriter struct {
	http.ResponseWriter
	r     *http.Request
	delay time.Duration
	slept bool
}

func (d *delayedWriter) wait() {
	if !d.slept {
		d.slept = true
		sleep(d.r, d.delay)
	}
}

func (d *delayedWriter) WriteHeader(code int) { d.wait(); d.ResponseWriter.WriteHeader(code) }

func (d *delayedWriter) Write(b []byte) (int, error) { d.wait(); return d.ResponseWriter.Write(b) }

func (d *delayedWriter) Flush() {
	d.wait()
	if f, ok := d.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (d *delayedWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	d.wait()
	hj, ok := d.ResponseWriter.(http.Hijacker)
	if !ok {
		return nil, nil, http.ErrNotSupported
	}
	return hj.Hijack()
}

func (d *delayedWriter) Unwrap() http.ResponseWriter { return d.ResponseWriter }

func (p *Proxy) forward(w http.ResponseWriter, r *http.Request, body []byte) {
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
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
		body, _ := e["MessageBody"].(string)
		if f.EntryBodyContains != "" && strings.Contains(body, f.EntryBodyContains) || f.EntryBodyContains == "" && i%every == 0 {
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
	return fmt.Sprintf("requests %v, fired %v, unanswered send entries %d, lost received messages %d, failed entries %d", s.Requests, s.Fired, s.UnansweredSendEntries, s.LostReceivedMessages, s.FailedEntries)
}
