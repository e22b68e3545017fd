package runbooks

import (
	"bufio"
	"context"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/dlqctl/dlqctl/internal/faultproxy"
	"github.com/dlqctl/dlqctl/internal/testenv"
)

// killSpec says which dlqctl process of a runbook the test kills (SIGKILL:
// a lost host, an evicted pod) and when: the first invocation whose
// command line holds every string of match and whose own recorded calls
// satisfy when. block names the runbook block the process belongs to (a
// substring of it): that block's exit code is then whatever the kill made
// it, and the runbook goes on with the next step as a person would.
type killSpec struct {
	match []string
	block string
	when  func(sqs, s3 []faultproxy.Call) bool
	// setup runs on the recording before the runbook starts (e.g. to slow
	// S3 writes down so the kill lands between two of them).
	setup func(r *recording)

	mu     sync.Mutex
	killed string // the killed command line
}

func (k *killSpec) killedCommand() string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.killed
}

// watch polls the recording until it kills the process; the returned
// func stops it.
func (k *killSpec) watch(t *testing.T, r *recording) func() {
	if k.setup != nil {
		k.setup(r)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			id, args := "", ""
			for _, c := range k.candidates(r) {
				var sqsCalls, s3Calls []faultproxy.Call
				for _, x := range r.sqs.Calls() {
					if x.AppID == c[0] {
						sqsCalls = append(sqsCalls, x)
					}
				}
				for _, x := range r.s3.Calls() {
					if x.AppID == c[0] {
						s3Calls = append(s3Calls, x)
					}
				}
				if k.when(sqsCalls, s3Calls) {
					id, args = c[0], c[1]
					break
				}
			}
			if id == "" {
				continue
			}
			pid, err := strconv.Atoi(strings.TrimPrefix(id, "rb"))
			if err != nil {
				t.Errorf("shim id %q: %v", id, err)
				return
			}
			if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
				t.Logf("kill -9 %d (%s): %v (it had ended)", pid, args, err)
				continue
			}
			k.mu.Lock()
			k.killed = args
			k.mu.Unlock()
			t.Logf("killed -9 `dlqctl %s` (pid %d)", args, pid)
			return
		}
	}()
	return func() { cancel(); <-done }
}

// candidates are the recorded invocations matching k.match: {id, args}.
func (k *killSpec) candidates(r *recording) [][2]string {
	f, err := os.Open(r.log)
	if err != nil {
		return nil
	}
	defer f.Close()
	var out [][2]string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		i, a, _ := strings.Cut(sc.Text(), "\t")
		ok := true
		for _, m := range k.match {
			ok = ok && strings.Contains(a, m)
		}
		if ok {
			out = append(out, [2]string{i, a})
		}
	}
	return out
}

func count(calls []faultproxy.Call, action, resourceHas string) int {
	n := 0
	for _, c := range calls {
		if c.Action == action && strings.Contains(c.Resource, resourceHas) {
			n++
		}
	}
	return n
}

// TestRunbooksSurviveAKilledProcess kills a dlqctl process in the middle
// of a runbook step and runs the rest of the runbook as written: it must
// still end with every message where the runbook puts it, none lost, none
// twice.
//
//   - canary-redrive: the ramped redrive is killed after its first
//     deletes; step 5 (`redrive resume --dlq`) finishes it from the
//     journal in $DLQCTL_STATE_DIR.
//
//   - archive-and-discard: step 3's archive --delete is killed the same
//     way (after its deletes, before its final manifest); step 4 finds the
//     run in the archive and step 6 restores every message of it.
//
//   - big-incident: one of the two archive processes is killed after its
//     parts were verified and its messages deleted, before its final
//     manifest (S3 writes are slowed so the kill lands there): it printed
//     nothing, only its checkpoint manifest is in S3; step 3 finds its run
//     in the archive and steps 5–6 restore it with the others.
//
// The DLQ is given as its ARN (canary-redrive) and its URL (the others),
// as a reader may paste it: names derived from it (the archive's queue=
// folder) and the run found by `redrive resume --dlq` must not depend on
// the form.
func TestRunbooksSurviveAKilledProcess(t *testing.T) {
	testenv.BuildBinary(t)
	cases := map[string]*killSpec{
		"canary-redrive.md": {
			match: []string{"redrive", "--ramp"},
			block: "--ramp",
			when: func(sqs, _ []faultproxy.Call) bool {
				return count(sqs, "DeleteMessageBatch", "") >= 1
			},
		},
		"archive-and-discard.md": {
			match: []string{"archive", "--class permanent", "--delete"},
			block: "--class permanent --delete",
			when: func(_, s3 []faultproxy.Call) bool {
				return count(s3, "PutObject", "_manifest-checkpoint-") >= 1 && count(s3, "PutObject", "/_manifest.json") >= 1
			},
			setup: func(r *recording) {
				r.s3.SetFaults(faultproxy.Fault{Action: "PutObject", Kind: faultproxy.Slow, Delay: time.Second})
			},
		},
		"big-incident.md": {
			match: []string{"archive", "--rate-share", "--delete"},
			block: "--rate-share",
			when: func(_, s3 []faultproxy.Call) bool {
				return count(s3, "PutObject", "_manifest-checkpoint-") >= 1 && count(s3, "PutObject", "/_manifest.json") >= 1
			},
			setup: func(r *recording) {
				// Every S3 write takes a second: the final manifest is
				// still on its way when the test sees it and kills.
				r.s3.SetFaults(faultproxy.Fault{Action: "PutObject", Kind: faultproxy.Slow, Delay: time.Second})
			},
		},
	}
	for name, k := range cases {
		t.Run(strings.TrimSuffix(name, ".md"), func(t *testing.T) {
			t.Parallel()
			env := testenv.Require(t)
			inc := setup(t, env)
			if name == "canary-redrive.md" {
				inc.vars["DLQ"] = inc.truth.DLQ.ARN
			} else {
				inc.vars["DLQ"] = inc.truth.DLQ.URL
			}
			runRunbookKilling(t, env, name, inc, k)
			if k.killedCommand() == "" {
				t.Fatalf("no process was killed: the test proved nothing (the kill condition was never met)")
			}
			after[name](t, env, inc)
			if name != "canary-redrive.md" {
				// The killed process's run has only checkpoints: no
				// manifest of its own, yet its messages were restored.
				prefix := map[string]string{"big-incident.md": "incidents/", "archive-and-discard.md": "dlq-archive/"}[name]
				out, err := env.S3(t).ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: aws.String(inc.bucket), Prefix: aws.String(prefix)})
				if err != nil {
					t.Fatal(err)
				}
				runs := map[string]bool{}
				for _, o := range out.Contents {
					k := aws.ToString(o.Key)
					if i := strings.LastIndex(k, "/"); i > 0 && strings.Contains(k, "_manifest") {
						runs[k[:i]] = runs[k[:i]] || strings.HasSuffix(k, "/_manifest.json")
					}
				}
				checkpointOnly := 0
				for _, complete := range runs {
					if !complete {
						checkpointOnly++
					}
				}
				t.Logf("archive runs: %d, of them checkpoint-only (the killed process): %d", len(runs), checkpointOnly)
				if checkpointOnly == 0 {
					t.Errorf("every run has its final manifest: the kill landed after the killed process finished, so the checkpoint path was not tested")
				}
			}
		})
	}
}
