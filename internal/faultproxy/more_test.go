package faultproxy

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestLatencyDelaysEveryRequestWithoutSerializing: every request through a
// Latency rule takes at least Delay, and requests are forwarded
// concurrently: the upstream below answers only once all n requests are
// inside it at the same time, which a proxy that serialized them (one
// sleeping request at a time) would never allow.
func TestLatencyDelaysEveryRequestWithoutSerializing(t *testing.T) {
	const n = 8
	const delay = 60 * time.Millisecond
	var arrived sync.WaitGroup
	arrived.Add(n)
	all := make(chan struct{})
	go func() { arrived.Wait(); close(all) }()
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived.Done()
		select {
		case <-all:
			w.Write([]byte(`{}`))
		case <-time.After(10 * time.Second):
			http.Error(w, "requests were not forwarded concurrently", http.StatusGatewayTimeout)
		}
	}))
	defer up.Close()
	p, _ := New(up.URL, Fault{Kind: Latency, Delay: delay})
	defer p.Close()

	var wg sync.WaitGroup
	errs := make(chan string, n)
	for range n {
		wg.Go(func() {
			start := time.Now()
			resp, _ := post(t, p.URL, "ReceiveMessage", map[string]any{})
			if resp == nil || resp.StatusCode != 200 {
				errs <- "request failed"
				return
			}
			if d := time.Since(start); d < delay {
				errs <- "request took " + d.String() + ", less than the injected latency"
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	if st := p.Stats(); st.Fired[Latency] != n || st.Requests["ReceiveMessage"] != n {
		t.Errorf("stats %s", st)
	}
}

// TestLatencyAddsToOtherFaults: a Latency rule does not hide the rules after
// it, and an injected error is delayed like a real one.
func TestLatencyAddsToOtherFaults(t *testing.T) {
	var got []string
	up := upstream(t, &got)
	defer up.Close()
	const delay = 40 * time.Millisecond
	p, _ := New(up.URL,
		Fault{Action: "SendMessageBatch", Kind: Latency, Delay: delay},
		Fault{Action: "SendMessageBatch", Kind: Throttle, Every: 2})
	defer p.Close()
	body := map[string]any{"QueueUrl": "q", "Entries": []map[string]string{{"Id": "a"}}}
	for i, want := range []int{200, 400} {
		start := time.Now()
		resp, _ := post(t, p.URL, "SendMessageBatch", body)
		if resp == nil || resp.StatusCode != want {
			t.Fatalf("request %d: %v, want status %d", i, resp, want)
		}
		if d := time.Since(start); d < delay {
			t.Errorf("request %d took %v, less than the injected latency", i, d)
		}
	}
	// Other actions are not delayed by a per-action rule.
	if resp, _ := post(t, p.URL, "ReceiveMessage", map[string]any{}); resp == nil || resp.StatusCode != 200 {
		t.Fatalf("ReceiveMessage: %v", resp)
	}
	if st := p.Stats(); st.Fired[Latency] != 2 || st.Fired[Throttle] != 1 || len(got) != 1 {
		t.Errorf("stats %s, upstream got %v", st, got)
	}
}

// TestStatus500AfterForwardsThenLosesTheAnswer: the server acts (it hands
// out messages), the client gets 500 InternalFailure, and the stats count
// the messages it never saw.
func TestStatus500AfterForwardsThenLosesTheAnswer(t *testing.T) {
	var calls atomic.Int32
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		w.Write([]byte(`{"Messages":[{"MessageId":"1","Body":"a"},{"MessageId":"2","Body":"b"},{"MessageId":"3","Body":"c"}]}`))
	}))
	defer up.Close()
	p, _ := New(up.URL, LostReceives(2, 1))
	defer p.Close()
	for i, want := range []int{200, 500, 200, 200} {
		resp, out := post(t, p.URL, "ReceiveMessage", map[string]any{"QueueUrl": "q"})
		if resp == nil || resp.StatusCode != want {
			t.Fatalf("receive %d: %v, want %d", i, resp, want)
		}
		if want == 500 && (out["__type"] != "com.amazonaws.sqs#InternalFailure" || resp.Header.Get("x-amzn-query-error") != "InternalFailure;Receiver") {
			t.Errorf("lost answer: %v %v", resp.Header, out)
		}
	}
	if calls.Load() != 4 {
		t.Errorf("upstream saw %d receives, want all 4 (the lost one included)", calls.Load())
	}
	if st := p.Stats(); st.LostReceivedMessages != 3 || st.Fired[Status500After] != 1 {
		t.Errorf("stats %s", st)
	}

	// Sends: the entries count as unanswered.
	var got []string
	up2 := upstream(t, &got)
	defer up2.Close()
	p2, _ := New(up2.URL, Fault{Kind: Status500After})
	defer p2.Close()
	resp, _ := post(t, p2.URL, "SendMessageBatch", map[string]any{"Entries": []map[string]string{{"Id": "a"}, {"Id": "b"}}})
	if resp == nil || resp.StatusCode != 500 || len(got) != 2 || p2.Stats().UnansweredSendEntries != 2 {
		t.Errorf("send: %v, upstream got %v, stats %s", resp, got, p2.Stats())
	}
}

// TestPassThroughChangesNothing: what the SDK signed (Host, Authorization,
// X-Amz-*) reaches the server as sent, nothing is added, and the server's
// answer comes back byte for byte (not decompressed).
func TestPassThroughChangesNothing(t *testing.T) {
	var seen *http.Request
	var seenBody []byte
	gz := []byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff, 1, 2, 3}
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = r.Clone(r.Context())
		seenBody, _ = io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		w.Header().Set("Content-Encoding", "gzip")
		w.Header().Set("X-Amzn-Requestid", "req-1")
		w.WriteHeader(200)
		w.Write(gz)
	}))
	defer up.Close()
	p, _ := New(up.URL)
	defer p.Close()

	body := []byte(`{"QueueUrl":"http://sqs.us-east-1.amazonaws.com/1/q","MaxNumberOfMessages":10}`)
	req, _ := http.NewRequest("POST", p.URL+"/", bytes.NewReader(body))
	req.Host = "sqs.us-east-1.amazonaws.com"
	hdr := map[string]string{
		"X-Amz-Target":          "AmazonSQS.ReceiveMessage",
		"Content-Type":          "application/x-amz-json-1.0",
		"Authorization":         "AWS4-HMAC-SHA256 Credential=testing/20260101/us-east-1/sqs/aws4_request, SignedHeaders=host;x-amz-date, Signature=abc",
		"X-Amz-Date":            "20260101T000000Z",
		"X-Amzn-Query-Mode":     "true",
		"User-Agent":            "aws-sdk-go-v2/1.0",
		"Amz-Sdk-Invocation-Id": "inv-1",
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	tr := &http.Transport{DisableCompression: true}
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()

	if seen.Host != req.Host || seen.URL.Path != "/" || seen.Method != "POST" || !bytes.Equal(seenBody, body) {
		t.Errorf("server saw %s %s host %q body %q", seen.Method, seen.URL, seen.Host, seenBody)
	}
	for k, v := range hdr {
		if seen.Header.Get(k) != v {
			t.Errorf("server saw %s = %q, want %q", k, seen.Header.Get(k), v)
		}
	}
	for k := range seen.Header {
		if _, sent := hdr[http.CanonicalHeaderKey(k)]; !sent && k != "Content-Length" {
			t.Errorf("proxy added header %s: %v", k, seen.Header[k])
		}
	}
	if !bytes.Equal(got, gz) || resp.Header.Get("Content-Encoding") != "gzip" || resp.Header.Get("X-Amzn-Requestid") != "req-1" {
		t.Errorf("client got %v %v", got, resp.Header)
	}
}

// TestQueryProtocolActionIsMatched: a form-encoded (Query protocol) request
// is matched by its Action.
func TestQueryProtocolActionIsMatched(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer up.Close()
	p, _ := New(up.URL, Fault{Action: "DeleteMessage", Kind: Status503})
	defer p.Close()
	resp, err := http.Post(p.URL, "application/x-www-form-urlencoded", strings.NewReader("Action=DeleteMessage&Version=2012-11-05"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 503 || p.Stats().Requests["DeleteMessage"] != 1 {
		t.Errorf("status %d, stats %s", resp.StatusCode, p.Stats())
	}
}

// TestStatsAndSetFaultsAreSafeConcurrently: run with -race.
func TestStatsAndSetFaultsAreSafeConcurrently(t *testing.T) {
	var mu sync.Mutex
	var got []string
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var in struct{ Entries []struct{ Id string } }
		b, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(b, &in)
		mu.Lock()
		for _, e := range in.Entries {
			got = append(got, e.Id)
		}
		mu.Unlock()
		w.Write([]byte(`{"Successful":[]}`))
	}))
	defer up.Close()
	p, _ := New(up.URL, Fault{Kind: EntryFail, EntryEvery: 2}, Fault{Kind: Latency, Delay: time.Millisecond})
	defer p.Close()
	const n = 40
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			post(t, p.URL, "SendMessageBatch", map[string]any{"Entries": []map[string]string{{"Id": "a"}, {"Id": "b"}}})
		})
		wg.Go(func() {
			_ = p.Stats().String()
			if i%10 == 0 {
				p.SetFaults(Fault{Kind: EntryFail, EntryEvery: 2}, Fault{Kind: Latency, Delay: time.Millisecond})
			}
		})
	}
	wg.Wait()
	st := p.Stats()
	if st.Requests["SendMessageBatch"] != n || st.FailedEntries != n || len(got) != n {
		t.Errorf("stats %s, upstream got %d entries", st, len(got))
	}
}
