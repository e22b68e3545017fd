package kafka

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/dlqctl/dlqctl/pkg/broker"
	"github.com/dlqctl/dlqctl/pkg/errs"
)

var (
	_ broker.ChainLister         = (*Endpoint)(nil)
	_ broker.Grouper             = (*Endpoint)(nil)
	_ broker.NothingPendingNoter = (*Endpoint)(nil)
	_ broker.TruncationNoter     = (*peekSource)(nil)
	_ broker.DLQLister           = (*TopicLister)(nil)
)

// RetryChain returns the other topics of the retry chain the endpoint's
// topic belongs to, as references without a user: its retry topics in
// order (retry-1 < retry-2 < … < retry), then its dead-letter topic(s)
// (orders-retry-1, orders-retry-2, …, orders-dlq).
func (e *Endpoint) RetryChain(ctx context.Context) ([]string, error) {
	_, base := Stage(e.Name())
	adm, err := e.Admin()
	if err != nil {
		return nil, err
	}
	td, err := adm.ListTopics(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing topics: %w", err)
	}
	var names []string
	for name := range td {
		if st, b := Stage(name); st != "" && b == base {
			names = append(names, name)
		}
	}
	sort.Slice(names, func(i, k int) bool { return stageOrder(names[i]) < stageOrder(names[k]) })
	var out []string
	for _, n := range names {
		if n == e.Name() {
			continue
		}
		a := e.addr.WithTopic(n)
		a.User = ""
		out = append(out, a.String())
	}
	return out, nil
}

// stageOrder sorts a chain: retry-1 < retry-2 < … < retry-10 < retry < dlt.
func stageOrder(topic string) string {
	st, _ := Stage(topic)
	switch {
	case st == "dlt":
		return "2" + topic
	case strings.HasPrefix(st, "retry-"):
		return fmt.Sprintf("0%08s", strings.TrimPrefix(st, "retry-"))
	}
	return "1" + topic
}

// listErr is a failed listing of the cluster's topics: nothing was read,
// so bad settings, an unreachable cluster, a refused login or ACL are
// exit 2, as on every broker.
func listErr(err error) error {
	var ue *UsageError
	if errors.As(err, &ue) {
		return errs.BadInputf("%s", ue.Msg)
	}
	return broker.StartError(err)
}

// TopicLister lists a cluster's dead-letter and retry topics (ListTopics)
// for `dlqctl queues`.
type TopicLister struct {
	Addr Address
	Conn Conn
	// Group is --kafka-group ("" : dlqctl-TOPIC for each topic).
	Group string
}

// ListDLQs lists the cluster's dead-letter and retry topics whose names
// start with opt.Prefix.
func (l *TopicLister) ListDLQs(ctx context.Context, opt broker.ListOptions) (broker.DLQListing, error) {
	topics, err := ListTopics(ctx, l.Addr, l.Conn, opt.Prefix, groupFor(l.Group))
	if err != nil {
		return broker.DLQListing{}, listErr(err)
	}
	if topics == nil {
		topics = []TopicInfo{}
	}
	out := broker.DLQListing{Items: broker.Items(topics), None: "no dead-letter or retry topics found",
		Columns: []string{"TOPIC", "STAGE", "PARTITIONS", "PENDING", "OLDEST", "RETENTION", "SOURCES", "FOUND BY"}}
	for _, ti := range topics {
		ret := "unlimited"
		if ti.RetentionMS >= 0 {
			ret = (time.Duration(ti.RetentionMS) * time.Millisecond).String()
		}
		oldest := "-"
		if ti.Pending > 0 {
			oldest = (time.Duration(ti.OldestPendingAge) * time.Second).String()
		}
		out.Rows = append(out.Rows, []string{ti.Name, ti.Stage, strconv.Itoa(len(ti.Partitions)), strconv.FormatInt(ti.Pending, 10), oldest, ret, strings.Join(ti.Sources, ","), ti.FoundBy})
	}
	return out, nil
}
