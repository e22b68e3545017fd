// Command bareloop is the baseline of the whole-process benchmarks in
// internal/procbench, and their process launcher.
//
//	bareloop loop -from DLQ_URL -to DEST_URL -workers W [-wait 1s] [-visibility 30s]
//
// moves every message of DLQ_URL to DEST_URL with W workers, each doing
// ReceiveMessage (10, long poll -wait) → SendMessageBatch → DeleteMessageBatch
// until its first empty receive: no journal, no lease, no marker, no
// per-entry bookkeeping beyond counting. It talks to SQS with the raw SDK
// (not pkg/queue) so that it stays the same while dlqctl changes. Endpoints,
// credentials and region come from the environment (AWS_ENDPOINT_URL_SQS …),
// as for dlqctl. It prints {"moved":N,"failed":F,"seconds":S} on stdout.
//
//	bareloop exec -rusage FILE -- PROGRAM ARGS...
//
// runs PROGRAM with this process's stdin, stdout, stderr and environment,
// waits for it, writes {"maxrss_kb":…,"wall_s":…,"exit":…} to FILE and
// exits with PROGRAM's exit code. It exists because a Go test process
// cannot read a child's peak RSS from wait4: Go starts children with
// CLONE_VM|CLONE_VFORK, and Linux carries the parent's RSS high-water mark
// into the child's ru_maxrss at exec, so a child reports at least the test
// process's peak. This launcher is small (a few MB), so the peak it passes on
// is far below what the programs it runs use.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	switch os.Args[1] {
	case "loop":
		os.Exit(loopMain(os.Args[2:]))
	case "exec":
		os.Exit(execMain(os.Args[2:]))
	default:
		usage()
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: bareloop loop -from URL -to URL -workers W [-wait 1s] | bareloop exec -rusage FILE -- PROGRAM ARGS...")
	os.Exit(2)
}

func execMain(args []string) int {
	fs := flag.NewFlagSet("exec", flag.ExitOnError)
	out := fs.String("rusage", "", "write the child's peak RSS and wall time (JSON) to this file")
	_ = fs.Parse(args)
	argv := fs.Args()
	if *out == "" || len(argv) == 0 {
		usage()
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	start := time.Now()
	err := cmd.Run()
	wall := time.Since(start)
	code := 0
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		code = ee.ExitCode()
	default:
		fmt.Fprintln(os.Stderr, "bareloop exec:", err)
		return 1
	}
	var maxrss int64
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		maxrss = ru.Maxrss // KiB on Linux
	}
	b, _ := json.Marshal(map[string]any{"maxrss_kb": maxrss, "wall_s": wall.Seconds(), "exit": code})
	if err := os.WriteFile(*out, b, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "bareloop exec:", err)
		return 1
	}
	if code < 0 { // killed by a signal
		code = 1
	}
	return code
}

func loopMain(args []string) int {
	fs := flag.NewFlagSet("loop", flag.ExitOnError)
	from := fs.String("from", "", "source queue URL")
	to := fs.String("to", "", "destination queue URL")
	workers := fs.Int("workers", 8, "concurrent receive→send→delete workers")
	wait := fs.Duration("wait", time.Second, "long poll wait of each receive")
	vis := fs.Duration("visibility", 30*time.Second, "visibility timeout of received messages")
	_ = fs.Parse(args)
	if *from == "" || *to == "" || *workers < 1 {
		usage()
	}
	ctx := context.Background()
	cfg, err := config.LoadDefaultConfig(ctx, config.WithHTTPClient(awshttp.NewBuildableClient().WithTransportOptions(func(t *http.Transport) {
		t.MaxIdleConns = 256
		t.MaxIdleConnsPerHost = 128
	})))
	if err != nil {
		fmt.Fprintln(os.Stderr, "bareloop:", err)
		return 1
	}
	api := sqs.NewFromConfig(cfg)
	start := time.Now()
	var moved, failed atomic.Int64
	var wg sync.WaitGroup
	for range *workers {
		wg.Go(func() {
			for {
				out, err := api.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
					QueueUrl:              from,
					MaxNumberOfMessages:   10,
					WaitTimeSeconds:       int32(wait.Seconds()),
					VisibilityTimeout:     int32(vis.Seconds()),
					MessageAttributeNames: []string{"All"},
				})
				if err != nil {
					fmt.Fprintln(os.Stderr, "bareloop: receive:", err)
					failed.Add(1)
					return
				}
				if len(out.Messages) == 0 {
					return
				}
				send := make([]types.SendMessageBatchRequestEntry, len(out.Messages))
				for i, m := range out.Messages {
					send[i] = types.SendMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), MessageBody: m.Body, MessageAttributes: m.MessageAttributes}
				}
				sent, err := api.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: to, Entries: send})
				if err != nil {
					fmt.Fprintln(os.Stderr, "bareloop: send:", err)
					failed.Add(int64(len(send)))
					continue
				}
				failed.Add(int64(len(sent.Failed)))
				var del []types.DeleteMessageBatchRequestEntry
				for _, s := range sent.Successful {
					i, _ := strconv.Atoi(aws.ToString(s.Id))
					del = append(del, types.DeleteMessageBatchRequestEntry{Id: s.Id, ReceiptHandle: out.Messages[i].ReceiptHandle})
				}
				if len(del) == 0 {
					continue
				}
				d, err := api.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: from, Entries: del})
				if err != nil {
					fmt.Fprintln(os.Stderr, "bareloop: delete:", err)
					failed.Add(int64(len(del)))
					continue
				}
				moved.Add(int64(len(d.Successful)))
				failed.Add(int64(len(d.Failed)))
			}
		})
	}
	wg.Wait()
	b, _ := json.Marshal(map[string]any{"moved": moved.Load(), "failed": failed.Load(), "seconds": time.Since(start).Seconds()})
	fmt.Println(string(b))
	if failed.Load() > 0 {
		return 4
	}
	return 0
}
