package amqp

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/dlqctl/dlqctl/pkg/finding"
)

// Audit check ids (audit -o json "check"), RabbitMQ's dead-lettering traps.
const (
	CheckNoDLX               = "rabbitmq-no-dlx"
	CheckDLXMissing          = "rabbitmq-dlx-missing"
	CheckDLXUnrouted         = "rabbitmq-dlx-routes-nowhere"
	CheckQuorumLimitNoDLX    = "rabbitmq-delivery-limit-without-dlx"
	CheckQuorumDefaultLimit  = "rabbitmq-quorum-default-delivery-limit"
	CheckDropWithoutDLX      = "rabbitmq-ttl-or-max-length-without-dlx"
	CheckDLQUnbounded        = "rabbitmq-dlq-unbounded"
	CheckDLQDrops            = "rabbitmq-dlq-drops-dead-letters"
	CheckCycleWithoutTTL     = "rabbitmq-dead-letter-cycle-without-ttl"
	CheckAtLeastOnceIneffect = "rabbitmq-at-least-once-not-in-effect"
	CheckAtMostOnce          = "rabbitmq-at-most-once-dead-lettering"
)

// Topology is a vhost as the management API describes it.
type Topology struct {
	VHost     string
	Version   string // RabbitMQ version ("3.10.8")
	Queues    []QueueInfo
	Exchanges []ExchangeInfo
	Bindings  []Binding
}

// LoadTopology reads a vhost's queues, exchanges and bindings.
func LoadTopology(ctx context.Context, m *Management, vhost string) (*Topology, error) {
	t := &Topology{VHost: vhost}
	ov, err := m.Overview(ctx)
	if err != nil {
		return nil, err
	}
	t.Version = ov.RabbitMQVersion
	if t.Queues, err = m.Queues(ctx, vhost); err != nil {
		return nil, err
	}
	if t.Exchanges, err = m.Exchanges(ctx, vhost); err != nil {
		return nil, err
	}
	if t.Bindings, err = m.Bindings(ctx, vhost); err != nil {
		return nil, err
	}
	return t, nil
}

// Major returns the server's major version (3 or 4; 0 when unknown).
func (t *Topology) Major() int {
	var maj int
	fmt.Sscanf(t.Version, "%d", &maj)
	return maj
}

func (t *Topology) exchange(name string) (ExchangeInfo, bool) {
	if name == "" {
		return ExchangeInfo{Name: "", Type: "direct"}, true // the default exchange
	}
	for _, e := range t.Exchanges {
		if e.Name == name {
			return e, true
		}
	}
	return ExchangeInfo{}, false
}

func (t *Topology) queue(name string) (QueueInfo, bool) {
	for _, q := range t.Queues {
		if q.Name == name {
			return q, true
		}
	}
	return QueueInfo{}, false
}

// routes returns the queues a message published to exchange with key
// reaches (key "" with any=true: every queue the exchange can reach with
// some key, for a dead-letter exchange that keeps each message's own key).
// Exchange-to-exchange bindings are followed; headers exchanges match any
// binding (their arguments are not evaluated).
func (t *Topology) routes(exchange, key string, any bool) []string {
	seen := map[string]bool{}
	var out []string
	var walk func(ex, key string, depth int)
	walk = func(ex, key string, depth int) {
		if depth > 8 || seen["x:"+ex] {
			return
		}
		seen["x:"+ex] = true
		if ex == "" {
			if _, ok := t.queue(key); ok && !seen["q:"+key] {
				seen["q:"+key] = true
				out = append(out, key)
			}
			return
		}
		e, ok := t.exchange(ex)
		if !ok {
			return
		}
		for _, b := range t.Bindings {
			if b.Source != ex {
				continue
			}
			if !any && !bindingMatches(e.Type, b.RoutingKey, key) {
				continue
			}
			if b.DestinationType == "exchange" {
				walk(b.Destination, key, depth+1)
				continue
			}
			if !seen["q:"+b.Destination] {
				seen["q:"+b.Destination] = true
				out = append(out, b.Destination)
			}
		}
	}
	walk(exchange, key, 0)
	return out
}

func bindingMatches(exType, pattern, key string) bool {
	switch exType {
	case "fanout", "headers", "x-random", "x-consistent-hash":
		return true
	case "topic":
		return topicMatch(strings.Split(pattern, "."), strings.Split(key, "."))
	}
	return pattern == key
}

func topicMatch(p, k []string) bool {
	if len(p) == 0 {
		return len(k) == 0
	}
	switch p[0] {
	case "#":
		for i := 0; i <= len(k); i++ {
			if topicMatch(p[1:], k[i:]) {
				return true
			}
		}
		return false
	case "*":
		return len(k) > 0 && topicMatch(p[1:], k[1:])
	}
	return len(k) > 0 && p[0] == k[0] && topicMatch(p[1:], k[1:])
}

// dlqTargets are the queues q's dead letters reach: through its DLX with
// its dead-letter routing key, or with each message's own routing keys
// (approximated by every key the DLX routes).
func (t *Topology) dlqTargets(q QueueInfo) []string {
	dlx, ok := q.DeadLetterExchange()
	if !ok {
		return nil
	}
	if key, ok := q.DeadLetterRoutingKey(); ok {
		return t.routes(dlx, key, false)
	}
	if dlx == "" {
		return nil // the default exchange with the message's key: unknown
	}
	return t.routes(dlx, "", true)
}

// AuditOptions select the queues to audit.
type AuditOptions struct {
	// Queues are queue names; empty audits every queue of the vhost
	// (whose name starts with Prefix).
	Queues []string
	Prefix string
}

// Audit checks a vhost's dead-lettering setup against RabbitMQ's traps.
// Display names the broker in findings (no credentials).
func Audit(t *Topology, o AuditOptions, display func(queue string) string) []finding.Finding {
	if display == nil {
		display = func(q string) string { return q }
	}
	// Which queues are DLQs: some queue's dead letters reach them.
	isDLQ := map[string][]string{} // DLQ -> its sources
	for _, q := range t.Queues {
		for _, d := range t.dlqTargets(q) {
			if d != q.Name {
				isDLQ[d] = append(isDLQ[d], q.Name)
			}
		}
	}
	// Queues of a dead-letter cycle are retry queues, not final DLQs.
	cycles := t.cycles()
	inCycle := map[string]bool{}
	for _, c := range cycles {
		for _, n := range c {
			inCycle[n] = true
		}
	}
	selected := func(name string) bool {
		if len(o.Queues) > 0 {
			return slices.Contains(o.Queues, name)
		}
		return strings.HasPrefix(name, o.Prefix)
	}
	var fs []finding.Finding
	add := func(sev finding.Severity, check string, q QueueInfo, related, problem, why string, fix finding.Fix) {
		fix.Queue = first(fix.Queue, q.Name)
		fs = append(fs, finding.Finding{Severity: sev, Check: check, Queue: q.Name, QueueURL: display(q.Name), Related: related, Problem: problem, Why: why, Fix: fix})
	}
	for _, q := range t.Queues {
		if !selected(q.Name) || strings.HasPrefix(q.Name, "amq.") || q.AutoDelete {
			continue
		}
		dlx, hasDLX := q.DeadLetterExchange()
		_, dlq := isDLQ[q.Name]
		ttl, hasTTL := q.MessageTTL()
		ml, hasML := q.MaxLength()
		mlb, hasMLB := q.MaxLengthBytes()
		limit, hasLimit := q.DeliveryLimit()
		policyFix := func(key, value string) finding.Fix {
			return finding.Fix{Text: fmt.Sprintf("set %s %s on the queue with a policy (a queue argument needs the queue re-declared)", key, value),
				Command: fmt.Sprintf(`rabbitmqctl set_policy -p %s --apply-to queues %s-%s '^%s$' '{"%s":%s}'`, shellQuote(t.VHost), policySafe(q.Name), key, regexpQuote(q.Name), key, value)}
		}
		if hasDLX {
			targets := t.dlqTargets(q)
			switch _, ok := t.exchange(dlx); {
			case !ok:
				add(finding.SevError, CheckDLXMissing, q, "", fmt.Sprintf("dead-letter exchange %q does not exist", dlx),
					"RabbitMQ drops a dead letter it cannot publish: every rejected, expired or overflowing message of this queue is lost",
					finding.Fix{Text: fmt.Sprintf("declare exchange %q and bind the DLQ to it, or point the queue at an existing exchange", dlx)})
			case len(targets) == 0 && dlx != "":
				add(finding.SevError, CheckDLXUnrouted, q, dlx, fmt.Sprintf("dead-letter exchange %q routes this queue's dead letters to no queue", dlx),
					"a dead letter that no binding matches is dropped silently (no return, no log line)",
					finding.Fix{Text: fmt.Sprintf("bind a DLQ to exchange %q (with the dead-letter routing key, or # on a topic exchange)", dlx)})
			}
			if q.Type == TypeQuorum {
				strategy := q.DeadLetterStrategy()
				switch {
				case strategy == "at-least-once" && q.Overflow() != "reject-publish":
					add(finding.SevWarn, CheckAtLeastOnceIneffect, q, dlx, "dead-letter-strategy at-least-once is set but overflow is "+q.Overflow()+", so RabbitMQ falls back to at-most-once",
						"at-least-once dead-lettering needs overflow reject-publish; with any other overflow dead letters are again lost when the DLQ cannot take them",
						policyFix("overflow", `"reject-publish"`))
				case strategy == "at-most-once" && (hasLimit || hasTTL || hasML):
					add(finding.SevInfo, CheckAtMostOnce, q, dlx, "dead-lettering is at-most-once (the default)",
						"a dead letter is dropped if the DLQ is unavailable or refuses it at that moment; quorum queues can guarantee it with at-least-once",
						finding.Fix{Text: "set dead-letter-strategy at-least-once and overflow reject-publish with a policy (quorum queues, RabbitMQ 3.10+)"})
				}
			} else if q.DeadLetterStrategy() == "at-least-once" {
				add(finding.SevWarn, CheckAtLeastOnceIneffect, q, dlx, "dead-letter-strategy at-least-once is set on a "+q.Type+" queue, which ignores it",
					"only quorum queues dead-letter at least once; this queue drops a dead letter the DLQ cannot take",
					finding.Fix{Text: "move the queue to a quorum queue if dead letters must not be lost"})
			}
		} else {
			var drops []string
			if hasTTL {
				drops = append(drops, fmt.Sprintf("a message TTL of %d ms", ttl))
			}
			if hasML {
				drops = append(drops, fmt.Sprintf("max-length %d", ml))
			}
			if hasMLB {
				drops = append(drops, fmt.Sprintf("max-length-bytes %d", mlb))
			}
			switch {
			case q.Type == TypeQuorum && hasLimit:
				add(finding.SevError, CheckQuorumLimitNoDLX, q, "", fmt.Sprintf("quorum queue with delivery limit %d and no dead-letter exchange", limit),
					"a message returned more often than the limit is dropped: a consumer that keeps failing deletes the data",
					policyFix("dead-letter-exchange", `"`+q.Name+`.dlx"`))
			case q.Type == TypeQuorum && t.Major() >= 4:
				add(finding.SevError, CheckQuorumDefaultLimit, q, "", "quorum queue without a dead-letter exchange on RabbitMQ "+t.Version+", whose default delivery limit is 20",
					"since 4.0 every quorum queue has a delivery limit of 20; a message returned 20 times is dropped",
					policyFix("dead-letter-exchange", `"`+q.Name+`.dlx"`))
			case len(drops) > 0 && !dlq:
				add(finding.SevError, CheckDropWithoutDLX, q, "", strings.Join(drops, " and ")+" without a dead-letter exchange",
					"messages that expire or overflow are deleted, not dead-lettered",
					policyFix("dead-letter-exchange", `"`+q.Name+`.dlx"`))
			case !dlq && q.Type != TypeStream && len(isDLQ) > 0:
				add(finding.SevWarn, CheckNoDLX, q, "", "no dead-letter exchange",
					"a consumer's reject (requeue=false) deletes the message instead of keeping it for a look",
					policyFix("dead-letter-exchange", `"`+q.Name+`.dlx"`))
			}
		}
		if dlq && !inCycle[q.Name] {
			sources := isDLQ[q.Name]
			related := strings.Join(sources, ", ")
			if !hasML && !hasMLB {
				add(finding.SevWarn, CheckDLQUnbounded, q, related, "dead-letter queue without a length limit",
					"an incident can fill it until RabbitMQ's memory or disk alarm blocks every publisher of the node",
					policyFix("max-length", "1000000"))
			}
			if hasTTL && !hasDLX {
				add(finding.SevWarn, CheckDLQDrops, q, related, fmt.Sprintf("the DLQ deletes dead letters after %d ms (message TTL, no dead-letter exchange of its own)", ttl),
					"dead letters expire before anyone looks at them",
					finding.Fix{Text: "remove the DLQ's TTL, or give it a dead-letter exchange to an archive queue; archive with dlqctl archive before they go"})
			}
		}
	}
	// Dead-letter cycles without a TTL: a rejected message loops at full
	// speed (RabbitMQ drops a cycling message only when no rejection is
	// in the cycle).
	for _, cyc := range cycles {
		if !selected(cyc[0]) {
			continue
		}
		ttlSomewhere := false
		for _, n := range cyc {
			if qi, ok := t.queue(n); ok {
				if _, ok := qi.MessageTTL(); ok {
					ttlSomewhere = true
				}
			}
		}
		if ttlSomewhere {
			continue
		}
		q, _ := t.queue(cyc[0])
		add(finding.SevWarn, CheckCycleWithoutTTL, q, strings.Join(cyc[1:], " -> "),
			"dead-letter cycle without a TTL: "+strings.Join(append(cyc, cyc[0]), " -> "),
			"a retry loop without a delay sends a failing message round at full speed; RabbitMQ drops it instead when the loop has no rejection in it",
			finding.Fix{Text: "put a message TTL on the retry (wait) queue of the cycle (a message-ttl policy), or remove the cycle"})
	}
	finding.Sort(fs)
	if fs == nil {
		fs = []finding.Finding{}
	}
	return fs
}

// cycles returns each dead-letter cycle once (starting at its smallest
// queue name).
func (t *Topology) cycles() [][]string {
	next := map[string][]string{}
	for _, q := range t.Queues {
		next[q.Name] = t.dlqTargets(q)
	}
	seen := map[string]bool{}
	var out [][]string
	var path []string
	onPath := map[string]int{}
	var dfs func(n string)
	dfs = func(n string) {
		if i, ok := onPath[n]; ok {
			cyc := slices.Clone(path[i:])
			// rotate to the smallest name
			m := 0
			for j := range cyc {
				if cyc[j] < cyc[m] {
					m = j
				}
			}
			cyc = append(cyc[m:], cyc[:m]...)
			key := strings.Join(cyc, "\x00")
			if !seen[key] {
				seen[key] = true
				out = append(out, cyc)
			}
			return
		}
		if len(path) > 16 {
			return
		}
		onPath[n] = len(path)
		path = append(path, n)
		for _, m := range next[n] {
			dfs(m)
		}
		path = path[:len(path)-1]
		delete(onPath, n)
	}
	names := make([]string, 0, len(next))
	for n := range next {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		dfs(n)
	}
	return out
}

func first(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func policySafe(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '\'' || r == ' ' {
			return '-'
		}
		return r
	}, s)
}

func regexpQuote(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`\.+*?()|[]{}^$`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// DLQ is a queue some queue's dead letters reach, with those sources.
type DLQ struct {
	Queue   QueueInfo
	Sources []string
}

// DeadLetterQueues lists the vhost's dead-letter queues (queues of a
// dead-letter cycle included: retry queues are listed too), by name.
func DeadLetterQueues(t *Topology) []DLQ {
	src := map[string][]string{}
	for _, q := range t.Queues {
		for _, d := range t.dlqTargets(q) {
			if d != q.Name && !slices.Contains(src[d], q.Name) {
				src[d] = append(src[d], q.Name)
			}
		}
	}
	var out []DLQ
	for _, q := range t.Queues {
		if s, ok := src[q.Name]; ok {
			slices.Sort(s)
			out = append(out, DLQ{Queue: q, Sources: s})
		}
	}
	slices.SortFunc(out, func(a, b DLQ) int { return strings.Compare(a.Queue.Name, b.Queue.Name) })
	return out
}
