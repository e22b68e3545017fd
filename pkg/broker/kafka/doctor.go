package kafka

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/dlqctl/dlqctl/pkg/broker"
)

// Doctor checks, with calls that change nothing, whether this shell can
// work on a Kafka dead-letter topic: which bootstrap brokers answer, TLS,
// SASL (and MSK IAM's AWS credentials), the topic's metadata and
// configuration, and dlqctl's consumer group: whether it can be described
// and whether committing its offsets is allowed (from the operations the
// brokers say this client is authorized for; never by committing). An
// unreachable cluster is a failed check, not an error: the error is for
// bad input only (exit 2). Nothing it returns carries a password.
//
// A reference to a cluster (kafka://HOST:PORT[,HOST:PORT…], no topic) is
// checked up to the brokers' metadata: the topic's and the group's checks
// are not-checked, naming the reference that checks a topic.
func Doctor(ctx context.Context, ref broker.Ref, cfg Config) ([]broker.DoctorCheck, error) {
	cluster := false
	if u := ref.URL(); u != nil && u.RawQuery == "" {
		// The URL keeps the user; a password is left for Open to refuse.
		_, pass := u.User.Password()
		if c, rest, ok := SplitCluster(u.String()); ok && strings.Trim(rest, "/") == "" && !pass {
			r, err := broker.ParseRef(OnCluster(c))
			if err != nil {
				return nil, err
			}
			ref, cluster = r, true
		}
	}
	ep, err := Open(ctx, ref, cfg)
	if err != nil {
		return nil, err
	}
	defer ep.Close()
	d := &kdoctor{ep: ep, res: ep.ID(), cluster: cluster}
	if cluster {
		d.res = Scheme + "://" + strings.Join(ep.addr.Brokers, ",")
	}
	d.run(ctx)
	return d.checks, nil
}

const (
	kcheckBootstrap   = "kafka bootstrap"
	kcheckTLS         = "kafka tls"
	kcheckSASL        = "kafka sasl"
	kcheckTopic       = "kafka topic"
	kcheckTopicConfig = "kafka topic config"
	kcheckGroup       = "kafka group"
	kcheckGroupPerms  = "kafka group permissions"
)

// ShortRetention is the DLT retention under which doctor warns: dead
// letters are usually replayed days after they land.
const ShortRetention = 7 * 24 * time.Hour

type kdoctor struct {
	ep      *Endpoint
	res     string
	cluster bool // the reference names no topic
	checks  []broker.DoctorCheck
}

func (d *kdoctor) add(name string, st broker.DoctorStatus, detail, fix string) {
	detail, fix = broker.Redact(detail, d.ep.conn.Password), broker.Redact(fix, d.ep.conn.Password)
	d.checks = append(d.checks, broker.DoctorCheck{Name: name, Status: st, Detail: detail, Fix: fix, Resource: d.res})
}

func (d *kdoctor) notChecked(because string, names ...string) {
	for _, n := range names {
		d.add(n, broker.DoctorNotChecked, "not checked: "+because, "")
	}
}

// noMSKTLSFix: AWS_MSK_IAM turns TLS on by itself, so it is off only
// when --kafka-tls=false was given.
const noMSKTLSFix = "drop --kafka-tls=false: AWS_MSK_IAM uses TLS by itself"

const mskPorts = "MSK listens on 9092 (plaintext), 9094 (TLS), 9096 (SASL/SCRAM over TLS) and 9098 (IAM over TLS)"

func (d *kdoctor) run(ctx context.Context) {
	c := d.ep.conn
	mech, _ := NormalizeSASL(c.SASL)
	tlsOn := c.TLS || c.CAFile != ""
	brokers := d.ep.addr.Brokers
	later := []string{kcheckTopic, kcheckTopicConfig, kcheckGroup, kcheckGroupPerms}

	// TLS, from the settings alone.
	switch {
	case mech == SASLAWSMSKIAM && !tlsOn:
		d.add(kcheckTLS, broker.DoctorFail, "AWS_MSK_IAM without TLS: MSK's IAM listener (port 9098) accepts TLS connections only", noMSKTLSFix)
	case tlsOn:
		detail := "TLS, the brokers' certificates verified against the system roots"
		if c.CAFile != "" {
			detail += " and --kafka-ca " + c.CAFile
		}
		d.add(kcheckTLS, broker.DoctorOK, detail, "")
	case mech == SASLPlain && !allLoopback(brokers):
		d.add(kcheckTLS, broker.DoctorWarn, "plaintext with SASL PLAIN: the password travels unencrypted to "+strings.Join(brokers, ","), "add --kafka-tls (and connect to the TLS listener's port)")
	default:
		detail := "plaintext (no TLS)"
		if allLoopback(brokers) {
			detail += " to loopback brokers: nothing leaves this machine"
		} else {
			detail += ": records travel unencrypted; pass --kafka-tls for a TLS listener"
		}
		d.add(kcheckTLS, broker.DoctorOK, detail, "")
	}

	// AWS credentials for MSK IAM, before dialling.
	if mech == SASLAWSMSKIAM {
		cctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		cr, err := c.AWS(cctx)
		cancel()
		if err != nil {
			d.add(kcheckSASL, broker.DoctorFail, "AWS_MSK_IAM needs AWS credentials and none could be loaded: "+err.Error(),
				"export AWS_PROFILE=PROFILE (or pass --profile; aws sso login --profile PROFILE for SSO), or run where an instance or task role provides them; 'dlqctl help iam' has the kafka-cluster:* policy")
			d.probeBootstrap(ctx)
			d.notChecked("no AWS credentials for AWS_MSK_IAM", later...)
			return
		}
		if !tlsOn {
			d.add(kcheckSASL, broker.DoctorNotChecked, "not checked: AWS_MSK_IAM (AWS credentials from "+cr.Source+") needs TLS first", noMSKTLSFix)
			d.probeBootstrap(ctx)
			d.notChecked("AWS_MSK_IAM needs TLS", later...)
			return
		}
	}

	if !d.probeBootstrap(ctx) {
		d.notChecked("no bootstrap broker answered", append([]string{kcheckSASL}, later...)...)
		return
	}

	adm, err := d.ep.Admin()
	if err != nil {
		d.add(kcheckSASL, broker.DoctorFail, err.Error(), "")
		d.notChecked("no client", later...)
		return
	}
	mctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	md, err := adm.BrokerMetadata(mctx)
	cancel()
	if err != nil {
		d.connectFailed(mech, err)
		d.notChecked("the cluster did not answer a metadata request", later...)
		return
	}
	d.sasl(mech)
	var listed []string
	for _, b := range md.Brokers {
		listed = append(listed, fmt.Sprintf("%d@%s", b.NodeID, net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port)))))
	}
	last := &d.checks[slices.IndexFunc(d.checks, func(x broker.DoctorCheck) bool { return x.Name == kcheckBootstrap })]
	last.Detail += fmt.Sprintf("; the cluster (%s) has %d broker(s): %s", firstNonEmpty(md.Cluster, "no cluster id"), len(md.Brokers), strings.Join(listed, ", "))

	if d.cluster {
		d.add(kcheckTopic, broker.DoctorNotChecked, "not checked: the reference names a cluster and no topic in it",
			fmt.Sprintf("dlqctl doctor %s/TOPIC checks a topic and dlqctl's consumer group on it; dlqctl queues %s lists the cluster's dead-letter and retry topics", d.res, d.res))
		d.notChecked("no topic named", kcheckTopicConfig, kcheckGroup, kcheckGroupPerms)
		return
	}
	d.topic(ctx, adm)
}

func firstNonEmpty(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}

func allLoopback(brokers []string) bool {
	for _, b := range brokers {
		h, _, err := net.SplitHostPort(b)
		if err != nil {
			return false
		}
		ip := net.ParseIP(h)
		if !strings.EqualFold(h, "localhost") && (ip == nil || !ip.IsLoopback()) {
			return false
		}
	}
	return true
}

// probeBootstrap asks each bootstrap broker for its API versions (over
// TLS when it is on; before any login, as Kafka allows) and says which
// answered as Kafka. It reports false when none did.
func (d *kdoctor) probeBootstrap(ctx context.Context) bool {
	tc, _ := d.ep.conn.tlsConfig()
	var ok, tcpOnly, down []string
	for _, b := range d.ep.addr.Brokers {
		tcp, err := apiVersions(ctx, b, tc)
		switch {
		case err == nil:
			ok = append(ok, b)
		case tcp:
			tcpOnly = append(tcpOnly, b+" ("+lastPart(err)+")")
		default:
			down = append(down, b+" ("+lastPart(err)+")")
		}
	}
	fix := "check HOST:PORT in the reference and that this shell can reach the brokers (firewall, security group, VPN); " + mskPorts
	notKafka := "the port took the TCP connection but did not answer as Kafka: "
	if tc == nil {
		notKafka += "if it is a TLS listener, add --kafka-tls"
	} else {
		notKafka += "if it is a plaintext listener, drop --kafka-tls; if the certificate is not trusted, pass --kafka-ca CA.pem"
	}
	notKafka += "; " + mskPorts
	var problems []string
	if len(tcpOnly) > 0 {
		problems = append(problems, "took the connection but did not answer as Kafka: "+strings.Join(tcpOnly, ", "))
	}
	if len(down) > 0 {
		problems = append(problems, "did not answer: "+strings.Join(down, ", "))
	}
	switch {
	case len(ok) == 0 && len(tcpOnly) > 0:
		d.add(kcheckBootstrap, broker.DoctorFail, "no bootstrap broker answered as Kafka; "+strings.Join(problems, "; "), notKafka)
		return false
	case len(ok) == 0:
		d.add(kcheckBootstrap, broker.DoctorFail, "no bootstrap broker answered; "+strings.Join(problems, "; "), fix)
		return false
	case len(problems) > 0:
		f := fix
		if len(tcpOnly) > 0 {
			f = notKafka
		}
		d.add(kcheckBootstrap, broker.DoctorWarn, "answered: "+strings.Join(ok, ", ")+"; "+strings.Join(problems, "; "), f)
	default:
		d.add(kcheckBootstrap, broker.DoctorOK, "answered: "+strings.Join(ok, ", "), "")
	}
	return true
}

func lastPart(err error) string {
	msg := err.Error()
	if i := strings.LastIndex(msg, ": "); i >= 0 {
		msg = msg[i+2:]
	}
	return msg
}

// apiVersions sends one ApiVersions request (v0, which every Kafka
// answers, before any login) to addr and reads the answer. tcp says
// whether the TCP connection was made.
func apiVersions(ctx context.Context, addr string, tc *tls.Config) (tcp bool, err error) {
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var dl net.Dialer
	raw, err := dl.DialContext(cctx, "tcp", addr)
	if err != nil {
		return false, err
	}
	defer raw.Close()
	if dl, ok := cctx.Deadline(); ok {
		_ = raw.SetDeadline(dl)
	}
	conn := raw
	if tc != nil {
		cfg := tc.Clone()
		if h, _, err := net.SplitHostPort(addr); err == nil {
			cfg.ServerName = h
		}
		tconn := tls.Client(raw, cfg)
		if err := tconn.HandshakeContext(cctx); err != nil {
			return true, fmt.Errorf("TLS handshake: %w", err)
		}
		conn = tconn
	}
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 0
	const corr = 7
	buf := kmsg.NewRequestFormatter(kmsg.FormatterClientID("dlqctl")).AppendRequest(nil, req, corr)
	if _, err := conn.Write(buf); err != nil {
		return true, err
	}
	var hdr [8]byte
	if _, err := io.ReadFull(conn, hdr[:]); err != nil {
		return true, err
	}
	size := int32(binary.BigEndian.Uint32(hdr[:4]))
	if size < 4 || size > 1<<20 || binary.BigEndian.Uint32(hdr[4:]) != corr {
		return true, errors.New("the answer is not a Kafka response")
	}
	body := make([]byte, size-4)
	if _, err := io.ReadFull(conn, body); err != nil {
		return true, err
	}
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.Version = 0
	if err := resp.ReadFrom(body); err != nil {
		return true, fmt.Errorf("the answer is not a Kafka ApiVersions response: %w", err)
	}
	return true, nil
}

// sasl reports the mechanism once the cluster answered a request after
// the login.
func (d *kdoctor) sasl(mech string) {
	c := d.ep.conn
	switch mech {
	case "":
		d.add(kcheckSASL, broker.DoctorOK, "none: the listener took the connection without authentication", "")
	case SASLAWSMSKIAM:
		d.add(kcheckSASL, broker.DoctorOK, "AWS_MSK_IAM: the cluster accepted this shell's AWS credentials", "")
	default:
		d.add(kcheckSASL, broker.DoctorOK, fmt.Sprintf("%s as user %q (password from %s): accepted", mech, c.User, EnvPassword), "")
	}
}

// connectFailed turns a failed metadata request into the check that says
// why. The brokers answered ApiVersions before it (probeBootstrap), so
// the listener speaks Kafka with these TLS settings: what failed is the
// login (a broker refuses it with an error or by closing the connection),
// or a listener that wants one.
func (d *kdoctor) connectFailed(mech string, err error) {
	msg := broker.Redact(err.Error(), d.ep.conn.Password)
	if strings.HasSuffix(msg, "EOF") {
		msg += " (the broker closed the connection during the login)"
	}
	switch mech {
	case "":
		d.add(kcheckSASL, broker.DoctorFail, "the brokers answered before any login but refused the metadata request: "+msg,
			"the listener wants authentication: pass --kafka-sasl MECHANISM with --kafka-user and "+EnvPassword+" (MSK: SCRAM-SHA-512 on port 9096, AWS_MSK_IAM on 9098, which turns TLS on)")
	case SASLAWSMSKIAM:
		d.add(kcheckSASL, broker.DoctorFail, "the cluster refused the AWS_MSK_IAM login: "+msg,
			"the credentials' principal needs kafka-cluster:Connect on the cluster ('dlqctl help iam'); check the profile or role in use and that the cluster has IAM authentication on")
	default:
		d.add(kcheckSASL, broker.DoctorFail, fmt.Sprintf("the cluster refused the %s login of user %q: %s", mech, d.ep.conn.User, msg),
			fmt.Sprintf("check --kafka-user (or the user in the reference), the password in %s and --kafka-sasl (the mechanism the listener has: MSK uses SCRAM-SHA-512 on port 9096)", EnvPassword))
	}
}

// topic checks the topic's metadata and configuration, then the group.
func (d *kdoctor) topic(ctx context.Context, adm *kadm.Client) {
	topic, group := d.ep.addr.Topic, d.ep.group
	cctx, cancel := context.WithTimeout(kadm.WithAuthorizedOps(ctx), 20*time.Second)
	defer cancel()
	tds, err := adm.ListTopics(cctx, topic)
	td, found := tds[topic]
	if err == nil && found {
		err = td.Err
	}
	switch {
	case err == nil && !found, errors.Is(err, kerr.UnknownTopicOrPartition):
		d.add(kcheckTopic, broker.DoctorFail, fmt.Sprintf("topic %s does not exist on %s", topic, strings.Join(d.ep.addr.Brokers, ",")),
			fmt.Sprintf("check the topic name (case matters); dlqctl queues kafka://%s lists the cluster's dead-letter and retry topics", d.ep.addr.Brokers[0]))
		d.notChecked("no such topic", kcheckTopicConfig, kcheckGroup, kcheckGroupPerms)
		return
	case errors.Is(err, kerr.TopicAuthorizationFailed):
		d.add(kcheckTopic, broker.DoctorFail, "DENIED: describing topic "+topic+": "+err.Error(), aclFix("topic", topic, "Describe", "Read"))
		d.notChecked("the topic could not be described", kcheckTopicConfig, kcheckGroup, kcheckGroupPerms)
		return
	case err != nil:
		d.add(kcheckTopic, broker.DoctorFail, "metadata of topic "+topic+": "+broker.Redact(err.Error(), d.ep.conn.Password), "")
		d.notChecked("the topic could not be described", kcheckTopicConfig, kcheckGroup, kcheckGroupPerms)
		return
	}
	rf := 0
	for _, p := range td.Partitions {
		rf = max(rf, len(p.Replicas))
	}
	detail := fmt.Sprintf("%d partition(s), replication factor %d", len(td.Partitions), rf)
	var plan *Plan
	if p, perr := MakePlan(cctx, adm, topic, group); perr == nil {
		plan = p
		detail += fmt.Sprintf("; %d record(s) pending for group %s (end − committed, an upper bound)", p.Pending(), group)
	}
	d.add(kcheckTopic, broker.DoctorOK, detail, "")

	d.topicConfig(cctx, adm, td, rf)
	d.group(cctx, adm, td, plan)
}

func (d *kdoctor) topicConfig(ctx context.Context, adm *kadm.Client, td kadm.TopicDetail, rf int) {
	topic := td.Topic
	rcs, err := adm.DescribeTopicConfigs(ctx, topic)
	var rc kadm.ResourceConfig
	if err == nil {
		rc, err = rcs.On(topic, nil)
		if err == nil {
			err = rc.Err
		}
	}
	if err != nil {
		fix := ""
		if errors.Is(err, kerr.TopicAuthorizationFailed) || errors.Is(err, kerr.ClusterAuthorizationFailed) {
			fix = aclFix("topic", topic, "DescribeConfigs")
		}
		d.add(kcheckTopicConfig, broker.DoctorWarn, "cleanup.policy and retention.ms unknown: DescribeConfigs failed: "+broker.Redact(err.Error(), d.ep.conn.Password)+" (audit needs it; redrive and archive do not)", fix)
		return
	}
	cfg := map[string]string{}
	for _, c := range rc.Configs {
		if c.Value != nil {
			cfg[c.Key] = *c.Value
		}
	}
	policy := firstNonEmpty(cfg["cleanup.policy"], "delete")
	ret := retention(cfg)
	detail := fmt.Sprintf("cleanup.policy %s, retention.ms %s", policy, fmtRetention(ret))
	if v := cfg["retention.ms"]; v != "" {
		detail = fmt.Sprintf("cleanup.policy %s, retention.ms %s (%s)", policy, v, fmtRetention(ret))
	}
	if v := cfg["min.insync.replicas"]; v != "" {
		detail += ", min.insync.replicas " + v
	}
	var warns, fixes []string
	alter := "kafka-configs.sh --bootstrap-server " + d.ep.addr.Brokers[0] + " --alter --entity-type topics --entity-name " + topic + " --add-config "
	if strings.Contains(policy, "compact") {
		warns = append(warns, "compaction keeps only the newest record per key: dead letters sharing a key are lost")
		fixes = append(fixes, alter+"cleanup.policy=delete")
	}
	if ret >= 0 && ret < ShortRetention {
		warns = append(warns, fmt.Sprintf("dead letters are deleted %s after they land, short for a DLT (replays often start days later)", fmtRetention(ret)))
		fixes = append(fixes, alter+"retention.ms="+strconv.FormatInt((14*24*time.Hour).Milliseconds(), 10)+" (14 days), and archive what must be kept longer (dlqctl archive)")
	}
	if rf == 1 {
		warns = append(warns, "replication factor 1: the only copy of each dead letter lives on one broker")
		fixes = append(fixes, "reassign the partitions to 3 replicas (kafka-reassign-partitions.sh)")
	}
	if len(warns) == 0 {
		d.add(kcheckTopicConfig, broker.DoctorOK, detail, "")
		return
	}
	d.add(kcheckTopicConfig, broker.DoctorWarn, detail+": "+strings.Join(warns, "; "), strings.Join(fixes, "; "))
}

// group describes dlqctl's consumer group and says whether committing its
// offsets is allowed, from the authorized operations the brokers report
// (KIP-430): an offset commit needs Read on the group and Read on the
// topic.
func (d *kdoctor) group(ctx context.Context, adm *kadm.Client, td kadm.TopicDetail, plan *Plan) {
	topic, group := td.Topic, d.ep.group
	dgs, err := adm.DescribeGroups(ctx, group)
	dg, ok := dgs[group]
	if err == nil && ok && dg.Err != nil && !errors.Is(dg.Err, kerr.GroupIDNotFound) {
		err = dg.Err
	}
	switch {
	case errors.Is(err, kerr.GroupAuthorizationFailed):
		d.add(kcheckGroup, broker.DoctorFail, "DENIED: describing consumer group "+group+": "+err.Error(), aclFix("group", group, "Describe", "Read"))
		d.add(kcheckGroupPerms, broker.DoctorFail, "committing offsets of "+group+" needs Read on the group, which describing it already lacks", aclFix("group", group, "Read"))
		return
	case err != nil:
		d.add(kcheckGroup, broker.DoctorFail, "describing consumer group "+group+": "+broker.Redact(err.Error(), d.ep.conn.Password), "")
		d.notChecked("the group could not be described", kcheckGroupPerms)
		return
	}
	committed := 0
	if plan != nil {
		for _, p := range plan.Partitions {
			if p.Committed >= 0 {
				committed++
			}
		}
	}
	state := dg.State
	switch {
	case !ok || errors.Is(dg.Err, kerr.GroupIDNotFound) || state == "Dead" || (committed == 0 && len(dg.Members) == 0):
		d.add(kcheckGroup, broker.DoctorOK, fmt.Sprintf("group %s has no members and no committed offsets on %s yet: a first run reads each partition from its log start", group, topic), "")
	case len(dg.Members) > 0:
		d.add(kcheckGroup, broker.DoctorWarn, fmt.Sprintf("group %s is %s with %d member(s) (another dlqctl run, or an application using dlqctl's group); committed offsets on %d of %d partition(s)", group, state, len(dg.Members), committed, len(td.Partitions)),
			"a run now shares the topic's partitions with them: wait for that run to end, or pass --kafka-group to use another group")
	default:
		d.add(kcheckGroup, broker.DoctorOK, fmt.Sprintf("group %s is %s; committed offsets on %d of %d partition(s) of %s", group, state, committed, len(td.Partitions), topic), "")
	}

	gops, tops := dg.AuthorizedOperations, td.AuthorizedOperations
	verify := fmt.Sprintf("verify the ACLs: kafka-acls.sh --bootstrap-server %s --list --group %s and --topic %s; dlqctl needs Read on group %s (commit), Read and Describe on topic %s, and Delete on it for archive --delete-records (MSK IAM: kafka-cluster:DescribeGroup, AlterGroup, ReadData, DescribeTopic; 'dlqctl help iam')", d.ep.addr.Brokers[0], group, topic, group, topic)
	if len(gops) == 0 || len(tops) == 0 {
		d.add(kcheckGroupPerms, broker.DoctorNotChecked, "not checked: the brokers did not report this client's authorized operations (KIP-430), and proving a commit would need one", verify)
		return
	}
	gRead, tRead, tDelete := slices.Contains(gops, kadm.OpRead), slices.Contains(tops, kadm.OpRead), slices.Contains(tops, kadm.OpDelete)
	switch {
	case !gRead:
		d.add(kcheckGroupPerms, broker.DoctorFail, "DENIED: no Read on group "+group+": committing offsets (redrive, archive --delete) will be refused", aclFix("group", group, "Read"))
	case !tRead:
		d.add(kcheckGroupPerms, broker.DoctorFail, "DENIED: no Read on topic "+topic+": reading and committing its offsets will be refused", aclFix("topic", topic, "Read"))
	default:
		detail := fmt.Sprintf("allowed: Read on group %s and on topic %s (the operations the brokers report for this client), which an offset commit needs", group, topic)
		if tDelete {
			detail += "; Delete on the topic (archive --delete-records) too"
		} else {
			detail += "; no Delete on the topic, so archive --delete-records would be refused"
		}
		d.add(kcheckGroupPerms, broker.DoctorOK, detail, "")
	}
}

// aclFix is the kafka-acls.sh command that grants ops on a resource.
func aclFix(kind, name string, ops ...string) string {
	var o []string
	for _, op := range ops {
		o = append(o, "--operation "+op)
	}
	return fmt.Sprintf("grant it: kafka-acls.sh --add --allow-principal User:PRINCIPAL %s --%s %s (MSK IAM: the kafka-cluster:* actions in 'dlqctl help iam')", strings.Join(o, " "), kind, name)
}
