package faultproxy

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"time"
)

// # Count lag
//
// AWS documents ApproximateNumberOfMessages, …NotVisible and …Delayed as
// approximate and eventually consistent: after activity they can trail the
// truth for up to a minute. SetCountLag(d) makes the proxy serve them so:
// it polls every queue it knows from the upstream (countPollEvery), keeps
// the samples, and answers a GetQueueAttributes with the Approximate*
// counts as they were d ago — every other attribute, and every other call,
// is the upstream's own answer now. A queue's history starts when the
// proxy first sees it: Watch(url) before the queue is filled gives a queue
// whose lagged counts still say "empty" for d after it was filled (a
// recovery queue right after a redrive into it); a queue first seen full
// keeps showing its first counts for d (a DLQ drained a moment ago).

// countPollEvery is how often the proxy samples a watched queue's counts.
const countPollEvery = 200 * time.Millisecond

var countAttrs = []string{
	"ApproximateNumberOfMessages",
	"ApproximateNumberOfMessagesNotVisible",
	"ApproximateNumberOfMessagesDelayed",
}

type countSample struct {
	at     time.Time
	counts map[string]string
}

type countLag struct {
	mu      sync.Mutex
	lag     time.Duration
	history map[string][]countSample // by queue URL
	stop    context.CancelFunc
	wg      sync.WaitGroup
	served  int
}

// SetCountLag makes GetQueueAttributes answer with the Approximate* counts
// as they were d ago (0: the upstream's counts now). See Watch.
func (p *Proxy) SetCountLag(d time.Duration) {
	p.lag.mu.Lock()
	p.lag.lag = d
	p.lag.mu.Unlock()
}

// LaggedAnswers is how many GetQueueAttributes answers carried counts older
// than the upstream's.
func (p *Proxy) LaggedAnswers() int {
	p.lag.mu.Lock()
	defer p.lag.mu.Unlock()
	return p.lag.served
}

// Watch starts sampling queueURL's counts now (the history lagged answers
// are taken from). Queues the proxy sees in a GetQueueAttributes are
// watched from then on.
func (p *Proxy) Watch(queueURL string) {
	p.lag.mu.Lock()
	if _, ok := p.lag.history[queueURL]; ok {
		p.lag.mu.Unlock()
		return
	}
	if p.lag.history == nil {
		p.lag.history = map[string][]countSample{}
	}
	p.lag.history[queueURL] = nil
	if p.lag.stop == nil {
		var ctx context.Context
		ctx, p.lag.stop = context.WithCancel(context.Background())
		p.lag.wg.Add(1)
		go func() { defer p.lag.wg.Done(); p.pollCounts(ctx) }()
	}
	p.lag.mu.Unlock()
	p.sampleCounts(context.Background(), queueURL)
}

func (p *Proxy) stopCountPolls() {
	p.lag.mu.Lock()
	stop := p.lag.stop
	p.lag.mu.Unlock()
	if stop != nil {
		stop()
		p.lag.wg.Wait()
	}
}

func (p *Proxy) pollCounts(ctx context.Context) {
	t := time.NewTicker(countPollEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		p.lag.mu.Lock()
		urls := make([]string, 0, len(p.lag.history))
		for u := range p.lag.history {
			urls = append(urls, u)
		}
		p.lag.mu.Unlock()
		for _, u := range urls {
			p.sampleCounts(ctx, u)
		}
	}
}

// sampleCounts asks the upstream for queueURL's counts (a GetQueueAttributes
// of its own: JSON protocol, with a SigV4-shaped Authorization header so
// moto routes it to SQS; the local servers do not check signatures).
func (p *Proxy) sampleCounts(ctx context.Context, queueURL string) {
	body, _ := json.Marshal(map[string]any{"QueueUrl": queueURL, "AttributeNames": countAttrs})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.target.String(), bytes.NewReader(body))
	if err != nil {
		return
	}
	req.Header.Set("Content-Type", "application/x-amz-json-1.0")
	req.Header.Set("X-Amz-Target", "AmazonSQS.GetQueueAttributes")
	req.Header.Set("X-Amz-Date", time.Now().UTC().Format("20060102T150405Z"))
	req.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential=testing/"+time.Now().UTC().Format("20060102")+"/us-east-1/sqs/aws4_request, SignedHeaders=host;x-amz-date, Signature=0")
	resp, err := p.rp.Transport.RoundTrip(req)
	if err != nil {
		return
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return
	}
	var out struct{ Attributes map[string]string }
	if json.Unmarshal(b, &out) != nil || out.Attributes == nil {
		return
	}
	p.addSample(queueURL, countSample{at: time.Now(), counts: out.Attributes})
}

func (p *Proxy) addSample(queueURL string, s countSample) {
	p.lag.mu.Lock()
	defer p.lag.mu.Unlock()
	h := append(p.lag.history[queueURL], s)
	// Keep the newest sample older than the lag (an answer's) and what is
	// newer.
	cut := 0
	for i := range h {
		if s.at.Sub(h[i].at) > p.lag.lag+time.Second {
			cut = i
		}
	}
	p.lag.history[queueURL] = h[cut:]
}

// lagged returns queueURL's counts as they were lag ago (the oldest sample
// when the history is shorter), or nil.
func (p *Proxy) lagged(queueURL string) map[string]string {
	p.lag.mu.Lock()
	defer p.lag.mu.Unlock()
	h := p.lag.history[queueURL]
	if len(h) == 0 {
		return nil
	}
	at := time.Now().Add(-p.lag.lag)
	pick := h[0]
	for _, s := range h {
		if s.at.After(at) {
			break
		}
		pick = s
	}
	p.lag.served++
	return pick.counts
}

func (p *Proxy) countLagOn() bool {
	p.lag.mu.Lock()
	defer p.lag.mu.Unlock()
	return p.lag.lag > 0
}

// serveLaggedCounts forwards a GetQueueAttributes and replaces the
// Approximate* counts of the answer with the lagged ones. It reports false
// when the request is not one it handles (then nothing was written).
func (p *Proxy) serveLaggedCounts(w http.ResponseWriter, r *http.Request, body []byte) bool {
	var in struct{ QueueUrl string }
	if !strings.HasPrefix(r.Header.Get("Content-Type"), "application/x-amz-json") || json.Unmarshal(body, &in) != nil || in.QueueUrl == "" {
		return false
	}
	p.Watch(in.QueueUrl)
	rec := httptest.NewRecorder()
	p.forward(rec, r, body)
	var out map[string]any
	old := p.lagged(in.QueueUrl)
	if rec.Code != http.StatusOK || old == nil || json.Unmarshal(rec.Body.Bytes(), &out) != nil {
		copyResponse(w, rec)
		return true
	}
	if attrs, ok := out["Attributes"].(map[string]any); ok {
		for _, k := range countAttrs {
			if _, asked := attrs[k]; asked {
				if v, ok := old[k]; ok {
					attrs[k] = v
				}
			}
		}
	}
	b, _ := json.Marshal(out)
	for k, v := range rec.Header() {
		w.Header()[k] = v
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(http.StatusOK)
	w.Write(b)
	return true
}
