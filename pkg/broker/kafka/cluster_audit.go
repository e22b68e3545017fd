package kafka

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/dlqctl/dlqctl/pkg/broker"
)

// ClusterAudit audits a whole cluster (audit kafka://HOST:PORT[/PREFIX]):
// every dead-letter topic that queues lists (by its name, or by the
// dead-letter headers of its records) whose name starts with Prefix, each
// as Audit audits a named one, and every retry chain listed without a
// dead-letter topic.
type ClusterAudit struct {
	Addr   Address // the brokers; Topic is not read
	Conn   Conn
	Prefix string
	// Group is --kafka-group ("": dlqctl-TOPIC for each topic).
	Group string
}

var _ broker.Auditor = (*ClusterAudit)(nil)

// Audit implements broker.Auditor.
func (c *ClusterAudit) Audit(ctx context.Context, opt broker.AuditOptions) (broker.AuditResult, error) {
	group := groupFor(c.Group)
	topics, err := ListTopics(ctx, c.Addr, c.Conn, c.Prefix, group)
	if err != nil {
		return broker.AuditResult{}, listErr(err)
	}
	// A chain has a dead-letter topic when one is named after its base
	// anywhere on the cluster (the prefix may leave it out of the
	// listing), or when a listed one's records name the base as their
	// source.
	// One client for the whole audit: the listing and every topic's
	// metadata and configuration.
	cluster := &Endpoint{addr: c.Addr, conn: c.Conn}
	defer cluster.Close()
	adm, err := cluster.Admin()
	if err != nil {
		return broker.AuditResult{}, broker.StartError(err)
	}
	hasDLT, err := namedDLTs(ctx, adm)
	if err != nil {
		return broker.AuditResult{}, broker.StartError(err)
	}
	for _, t := range topics {
		if t.Stage == "dlt" {
			for _, s := range t.Sources {
				hasDLT[s] = true
			}
		}
	}
	var res broker.AuditResult
	chains := map[string][]string{} // base -> retry topics
	for _, t := range topics {
		stage, base := Stage(t.Name)
		if t.Stage != "dlt" {
			chains[base] = append(chains[base], t.Name)
			continue
		}
		ep, err := cluster.onTopic(t.Name, group(t.Name))
		if err != nil {
			return broker.AuditResult{}, broker.StartError(err)
		}
		fs, notes, err := Audit(ctx, ep, AuditOptions{InvestigationWindow: opt.InvestigationWindow, Sample: opt.Sample})
		if err != nil {
			return broker.AuditResult{}, err
		}
		if stage == "" {
			notes = append(notes, fmt.Sprintf("%s: audited as a dead-letter topic because its records carry dead-letter headers (its name does not say so)", t.Name))
		}
		res.Audited = append(res.Audited, ep.String())
		res.Findings = append(res.Findings, fs...)
		res.Notes = append(res.Notes, notes...)
	}
	bases := make([]string, 0, len(chains))
	for b := range chains {
		bases = append(bases, b)
	}
	sort.Strings(bases)
	for _, b := range bases {
		if hasDLT[b] {
			continue
		}
		chain := chains[b]
		sort.Strings(chain)
		last := chain[len(chain)-1]
		res.Audited = append(res.Audited, c.Addr.WithTopic(last).String())
		res.Findings = append(res.Findings, retryWithoutDLT(last, chain, b))
	}
	if len(res.Audited) == 0 {
		res.Notes = append(res.Notes, fmt.Sprintf("no dead-letter or retry topics on %s%s (dlqctl queues lists what it finds; a topic named kafka://HOST:PORT/TOPIC is audited whatever its name)", strings.TrimSuffix(c.Addr.WithTopic("").String(), "/"), prefixNote(c.Prefix)))
	}
	return res, nil
}

// namedDLTs is the set of bases (the topic a chain is named after) that
// have a topic named as their dead-letter topic on the cluster.
func namedDLTs(ctx context.Context, adm *kadm.Client) (map[string]bool, error) {
	all, err := adm.ListTopics(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing topics: %w", err)
	}
	out := map[string]bool{}
	for _, n := range all.Names() {
		if st, base := Stage(n); st == "dlt" {
			out[base] = true
		}
	}
	return out, nil
}

// groupFor is the consumer group of each topic: --kafka-group g when
// given, else dlqctl-TOPIC.
func groupFor(g string) func(topic string) string {
	return func(topic string) string {
		if g != "" {
			return g
		}
		return DefaultGroup(topic)
	}
}

func prefixNote(p string) string {
	if p == "" {
		return ""
	}
	return " whose name starts with " + p
}
