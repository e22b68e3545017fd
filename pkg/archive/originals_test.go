package archive

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/dlqctl/dlqctl/internal/testenv"
	"github.com/dlqctl/dlqctl/pkg/record"
)

func originalRec(i int) *record.Record {
	body := fmt.Sprintf(`{"order":"o-%d","amount":"%d.50"}`, i, i)
	return &record.Record{MessageID: fmt.Sprintf("m-%04d", i), Body: body, BodySHA256: record.SHA256Hex(body),
		Attributes: map[string]record.Attribute{"tenant": {Type: "String", Value: "acme"}}}
}

// journalFake records the parts Originals reports, as the run's journal
// does.
type journalFake struct {
	mu    sync.Mutex
	parts []json.RawMessage
	ids   map[string]int
}

func (j *journalFake) onPart(part json.RawMessage, ids []string) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.parts = append(j.parts, part)
	for _, id := range ids {
		j.ids[id]++
	}
	return nil
}

// TestOriginalsKeepsEveryRecordOnceUnderConcurrency: 16 workers keep 40
// batches each; every original is in exactly one verified part, recorded
// once, and the manifest reads them back byte for byte.
func TestOriginalsKeepsEveryRecordOnceUnderConcurrency(t *testing.T) {
	env := testenv.Require(t)
	api := env.S3(t)
	bucket := newBucket(t, api)
	o := NewOriginals(api, OriginalsOptions{Dest: Location{Bucket: bucket, Key: "orig"}, Queue: QueueInfo{Name: "orders-dlq"}})
	j := &journalFake{ids: map[string]int{}}
	o.Start("run-1", time.Now(), 0, j.onPart)
	var wg sync.WaitGroup
	const workers, batches, per = 16, 40, 10
	errc := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			for b := range batches {
				var recs []*record.Record
				for k := range per {
					recs = append(recs, originalRec((w*batches+b)*per+k))
				}
				if err := o.Keep(t.Context(), recs); err != nil {
					errc <- err
					return
				}
				// Once Keep returns, the batch is recorded.
				j.mu.Lock()
				n := j.ids[recs[0].MessageID]
				j.mu.Unlock()
				if n != 1 {
					errc <- fmt.Errorf("Keep returned before its part was recorded (%d)", n)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	total := workers * batches * per
	if len(j.ids) != total {
		t.Fatalf("%d ids recorded, want %d", len(j.ids), total)
	}
	if len(j.parts) >= workers*batches {
		t.Errorf("%d parts for %d batches: concurrent batches should share parts", len(j.parts), workers*batches)
	}
	key, err := o.Finish(t.Context(), j.parts, true, "")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	err = ForEachRecord(t.Context(), Ref{Src: S3Source{API: api, Bucket: bucket}, Key: key}, func(rec *record.Record, _ any) error {
		if _, dup := got[rec.MessageID]; dup {
			return fmt.Errorf("%s archived twice", rec.MessageID)
		}
		got[rec.MessageID] = rec.Body
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for i := range total {
		want := originalRec(i)
		if got[want.MessageID] != want.Body {
			t.Fatalf("%s: archived %q, want %q", want.MessageID, got[want.MessageID], want.Body)
		}
	}
	rep, err := VerifyArchive(t.Context(), Ref{Src: S3Source{API: api, Bucket: bucket}, Key: key}, nil)
	if err != nil || !rep.OK {
		t.Fatalf("verify: %v %+v", err, rep)
	}
	t.Logf("%d records in %d parts from %d batches", total, len(j.parts), workers*batches)
}

// TestOriginalsAfterAKill: a part an earlier attempt uploaded and never
// recorded (killed in between) does not stop the next attempt, which
// writes past it; the resumed attempt's manifest replaces the earlier one
// and lists every recorded part, in order.
func TestOriginalsAfterAKill(t *testing.T) {
	env := testenv.Require(t)
	api := env.S3(t)
	bucket := newBucket(t, api)
	started := time.Now()
	opts := OriginalsOptions{Dest: Location{Bucket: bucket, Key: "orig"}, Queue: QueueInfo{Name: "orders-dlq"}}
	j := &journalFake{ids: map[string]int{}}

	first := NewOriginals(api, opts)
	first.Start("run-2", started, 0, j.onPart)
	if err := first.Keep(t.Context(), []*record.Record{originalRec(1)}); err != nil {
		t.Fatal(err)
	}
	if _, err := first.Finish(t.Context(), j.parts, false, "interrupted"); err != nil {
		t.Fatal(err)
	}
	// The orphan: part 2 uploaded by an attempt killed before recording it.
	orphan := PartKey(first.RunDir(), 2)
	if _, err := api.PutObject(t.Context(), &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(orphan), Body: bytes.NewReader([]byte("x"))}); err != nil {
		t.Fatal(err)
	}

	second := NewOriginals(api, opts)
	second.Start("run-2", started, len(j.parts), j.onPart)
	if err := second.Keep(t.Context(), []*record.Record{originalRec(2), originalRec(3)}); err != nil {
		t.Fatalf("the resumed attempt could not keep past the orphan part: %v", err)
	}
	key, err := second.Finish(t.Context(), j.parts, true, "")
	if err != nil {
		t.Fatalf("the resumed attempt could not rewrite the manifest: %v", err)
	}
	m, err := ReadManifest(t.Context(), Ref{Src: S3Source{API: api, Bucket: bucket}, Key: key})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, p := range m.Parts {
		keys = append(keys, p.Key)
	}
	if !m.Complete || m.Totals.Records != 3 || len(keys) != 2 || !sort.StringsAreSorted(keys) || keys[0] != PartKey(first.RunDir(), 1) || keys[1] != PartKey(first.RunDir(), 3) {
		t.Fatalf("manifest complete=%v records=%d parts %v", m.Complete, m.Totals.Records, keys)
	}
}
