package faultproxy

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

// upstream answers SendMessageBatch like SQS: every entry it receives succeeds.
func upstream(t *testing.T, got *[]string) *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var in struct{ Entries []struct{ Id string } }
		b, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(b, &in)
		var ok []map[string]string
		for _, e := range in.Entries {
			*got = append(*got, e.Id)
			ok = append(ok, map[string]string{"Id": e.Id, "MessageId": "m-" + e.Id})
		}
		json.NewEncoder(w).Encode(map[string]any{"Successful": ok})
	}))
}

func post(t *testing.T, url, action string, body any) (*http.Response, map[string]any) {
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest("POST", url, bytes.NewReader(b))
	req.Header.Set("X-Amz-Target", "AmazonSQS."+action)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, nil
	}
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp, out
}

func TestEntryFailuresAreRemovedUpstreamAndReportedDownstream(t *testing.T) {
	var got []string
	up := upstream(t, &got)
	defer up.Close()
	p, err := New(up.URL, Fault{Action: "SendMessageBatch", Kind: EntryFail, EntryEvery: 2, EntryCode: "InvalidParameterValue", EntrySenderFault: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	entries := []map[string]string{{"Id": "0"}, {"Id": "1"}, {"Id": "2"}, {"Id": "3"}}
	resp, out := post(t, p.URL, "SendMessageBatch", map[string]any{"QueueUrl": "q", "Entries": entries})
	if resp == nil || resp.StatusCode != 200 {
		t.Fatalf("response %v", resp)
	}
	if len(got) != 2 || got[0] != "1" || got[1] != "3" {
		t.Fatalf("upstream received %v, want entries 1 and 3", got)
	}
	failed, _ := out["Failed"].([]any)
	ok, _ := out["Successful"].([]any)
	if len(failed) != 2 || len(ok) != 2 {
		t.Fatalf("response %v", out)
	}
	f0 := failed[0].(map[string]any)
	if f0["Id"] != "0" || f0["Code"] != "InvalidParameterValue" || f0["SenderFault"] != true {
		t.Fatalf("failed entry %v", f0)
	}
	if st := p.Stats(); st.FailedEntries != 2 || st.Fired[EntryFail] != 1 {
		t.Fatalf("stats %s", st)
	}
}

func TestThrottleAndResetAfterCountWhatReachedTheServer(t *testing.T) {
	var got []string
	up := upstream(t, &got)
	defer up.Close()
	p, _ := New(up.URL,
		Fault{Action: "SendMessageBatch", Kind: ResetAfter, Limit: 1},
		Fault{Kind: Throttle, Every: 2})
	defer p.Close()
	body := map[string]any{"QueueUrl": "q", "Entries": []map[string]string{{"Id": "a"}, {"Id": "b"}}}
	if resp, _ := post(t, p.URL, "SendMessageBatch", body); resp != nil {
		t.Fatal("reset-after answered the client")
	}
	if len(got) != 2 || p.Stats().UnansweredSendEntries != 2 {
		t.Fatalf("the server must have applied the call: got %v, stats %s", got, p.Stats())
	}
	post(t, p.URL, "ReceiveMessage", map[string]any{}) // 1st matching the throttle rule: passes
	resp, out := post(t, p.URL, "ReceiveMessage", map[string]any{})
	if resp == nil || resp.StatusCode != 400 || out["__type"] != "com.amazonaws.sqs#ThrottlingException" || resp.Header.Get("x-amzn-query-error") != "ThrottlingException;Sender" {
		t.Fatalf("throttle: %v %v", resp, out)
	}
}
