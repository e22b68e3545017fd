package amqp

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	amqp091 "github.com/rabbitmq/amqp091-go"

	"github.com/dlqctl/dlqctl/pkg/broker"
)

// Doctor checks, with calls that change nothing, whether this shell can
// work on a RabbitMQ queue: the node answers, the login and the vhost are
// accepted, TLS (or what travels in clear), the management API and its
// RabbitMQ version, the queue, its type, arguments and policy, whether some
// queue dead-letters into it, and the user's permissions on it. A broker
// that cannot be reached is a failed check, not an error; the error is for
// bad input only (a reference or flag that cannot be used: exit 2).
// Nothing it returns carries a password.
//
// A reference to a vhost (amqp://HOST/VHOST/, or amqp://HOST/ for the
// default vhost /) is checked up to the management API: the queue's
// checks are not-checked, naming the reference that checks one.
func Doctor(ctx context.Context, bref broker.Ref, cfg Config) ([]broker.DoctorCheck, error) {
	ep, err := parseEndpoint(bref, cfg, true)
	if err != nil {
		return nil, err
	}
	vhostOnly := !ep.isExchange && ep.ref.Queue == ""
	d := &doctorRun{ep: ep, r: ep.ref, res: ep.ID(), vhostOnly: vhostOnly}
	if vhostOnly {
		d.res = vhostID(ep.ref)
	}
	d.run(ctx)
	return d.checks, nil
}

// vhostID is a vhost's reference as doctor names the resource:
// amqp[s]://HOST:PORT/VHOST/, no credentials.
func vhostID(r Ref) string {
	s := r.String()
	return s[:strings.LastIndexByte(s, '/')+1]
}

type doctorRun struct {
	ep        *Endpoint
	r         Ref
	res       string
	vhostOnly bool
	checks    []broker.DoctorCheck
}

const (
	checkConnection = "rabbitmq connection"
	checkAuth       = "rabbitmq authentication"
	checkVHost      = "rabbitmq vhost"
	checkTLS        = "rabbitmq tls"
	checkMgmt       = "rabbitmq management"
	checkQueue      = "rabbitmq queue"
	checkSettings   = "rabbitmq queue settings"
	checkSources    = "rabbitmq dead-letter sources"
	checkPerms      = "rabbitmq permissions"
	checkExchange   = "rabbitmq exchange"
)

func (d *doctorRun) add(name string, st broker.DoctorStatus, detail, fix string) {
	// Belt and braces: no detail or fix may carry the password.
	detail, fix = broker.Redact(detail, d.r.pass), broker.Redact(fix, d.r.pass)
	d.checks = append(d.checks, broker.DoctorCheck{Name: name, Status: st, Detail: detail, Fix: fix, Resource: d.res})
}

func (d *doctorRun) notChecked(because string, names ...string) {
	for _, n := range names {
		d.add(n, broker.DoctorNotChecked, "not checked: "+because, "")
	}
}

func (d *doctorRun) run(ctx context.Context) {
	r := d.r
	d.tls()
	dctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	conn, err := Dial(dctx, r, ConnOptions{CAFile: d.ep.cfg.CAFile, ConnectionName: "dlqctl doctor", DialTimeout: 10 * time.Second})
	cancel()
	rest := []string{checkMgmt, checkQueue, checkSettings, checkSources, checkPerms}
	switch {
	case d.ep.isExchange:
		rest = []string{checkMgmt, checkExchange}
	case d.vhostOnly:
		rest = []string{checkMgmt, checkQueue}
	}
	switch {
	case err == nil:
		defer conn.Close()
		d.add(checkConnection, broker.DoctorOK, "AMQP 0-9-1 at "+r.HostPort()+" answered: "+serverName(conn), "")
		d.add(checkAuth, broker.DoctorOK, fmt.Sprintf("user %q logged in (%s)", r.user, d.credsFrom()), d.credsFix())
		if d.r.credsFrom == "url" {
			d.checks[len(d.checks)-1].Status = broker.DoctorWarn
			d.checks[len(d.checks)-1].Detail += ": the password is on the command line, where ps and the shell history keep it"
		}
		d.add(checkVHost, broker.DoctorOK, fmt.Sprintf("vhost %q is open to user %q", r.VHost, r.user), "")
	case errors.Is(err, ErrAuth):
		d.add(checkConnection, broker.DoctorOK, "AMQP 0-9-1 at "+r.HostPort()+" answered", "")
		d.add(checkAuth, broker.DoctorFail, fmt.Sprintf("RabbitMQ refused the login of user %q (%s)", r.user, d.credsFrom()),
			"check the user name and password ("+EnvUsername+" / "+EnvPassword+", or USER:PASS@ in the reference), that the user exists (rabbitmqctl list_users) and, for guest, that the host is localhost: RabbitMQ lets guest in only from there")
		d.notChecked("the login failed", append([]string{checkVHost}, rest...)...)
		return
	case errors.Is(err, ErrVHostRefused):
		d.add(checkConnection, broker.DoctorOK, "AMQP 0-9-1 at "+r.HostPort()+" answered", "")
		d.add(checkAuth, broker.DoctorOK, fmt.Sprintf("user %q logged in (%s)", r.user, d.credsFrom()), "")
		d.add(checkVHost, broker.DoctorFail, err.Error(),
			fmt.Sprintf("check the vhost in the reference (amqp://HOST:PORT/VHOST/QUEUE, %%2f for the default vhost /); rabbitmqctl list_vhosts lists them, and rabbitmqctl set_permissions -p VHOST %s '' '.*' '.*' gives the user read and write there", r.user))
		d.notChecked("the vhost was refused", rest...)
		return
	default:
		d.add(checkConnection, broker.DoctorFail, err.Error(), d.connectFix(err))
		d.notChecked("no connection to "+r.HostPort(), append([]string{checkAuth, checkVHost}, rest...)...)
		return
	}

	ov, merr := d.ep.mgmt.Overview(ctx)
	mgmtFix := fmt.Sprintf("enable the plugin on the node (rabbitmq-plugins enable rabbitmq_management), or pass --amqp-management-url (or export DLQCTL_AMQP_MANAGEMENT_URL) when it listens elsewhere than %s; without it queues, audit, check and watch do not work, peeking refuses, and a redrive assumes the strictest queue type", DefaultManagementURL(r))
	switch {
	case merr == nil:
		detail := fmt.Sprintf("%s answered: RabbitMQ %s", d.ep.mgmt.URL(), ov.RabbitMQVersion)
		if ov.ErlangVersion != "" {
			detail += ", Erlang " + ov.ErlangVersion
		}
		if ov.ClusterName != "" {
			detail += ", cluster " + ov.ClusterName
		}
		var who struct {
			Tags any `json:"tags"`
		}
		if d.ep.mgmt.get(ctx, &who, "whoami") == nil {
			if t := tagList(who.Tags); t != "" {
				detail += fmt.Sprintf("; user %q has tags %s", r.user, t)
			}
		}
		d.add(checkMgmt, broker.DoctorOK, detail, "")
	case errors.Is(merr, ErrAuth):
		d.add(checkMgmt, broker.DoctorFail, merr.Error(),
			fmt.Sprintf("give user %q the monitoring (or management) tag: rabbitmqctl set_user_tags %s monitoring; the management API takes the same credentials as AMQP", r.user, r.user))
	default:
		d.add(checkMgmt, broker.DoctorFail, merr.Error(), mgmtFix)
	}

	if d.vhostOnly {
		d.add(checkQueue, broker.DoctorNotChecked, fmt.Sprintf("not checked: the reference names vhost %q and no queue in it", r.VHost),
			fmt.Sprintf("dlqctl doctor %sQUEUE checks a queue; dlqctl queues %s lists the vhost's dead-letter queues", d.res, d.res))
		return
	}
	if d.ep.isExchange {
		if err := CheckExchange(conn, d.ep.exchange); err != nil {
			fix := ""
			if errors.Is(err, ErrNotFound) {
				fix = fmt.Sprintf("check the exchange name; rabbitmqctl list_exchanges -p %s lists them", shellQuote(r.VHost))
			}
			d.add(checkExchange, broker.DoctorFail, err.Error(), fix)
			return
		}
		d.add(checkExchange, broker.DoctorOK, fmt.Sprintf("exchange %q exists in vhost %q", d.ep.exchange, r.VHost), "")
		return
	}

	ready, qerr := readyCount(conn, r.Queue)
	if qerr != nil {
		if errors.Is(qerr, ErrNotFound) {
			d.add(checkQueue, broker.DoctorFail, fmt.Sprintf("queue %q does not exist in vhost %q at %s", r.Queue, r.VHost, r.HostPort()),
				fmt.Sprintf("check the queue name (case matters) and the vhost; dlqctl queues amqp://%s/%s/ lists the vhost's dead-letter queues", r.HostPort(), url.PathEscape(r.VHost)))
		} else {
			d.add(checkQueue, broker.DoctorFail, fmt.Sprintf("queue %q: %v", r.Queue, qerr), "")
		}
		d.notChecked("the queue could not be read", checkSettings, checkSources, checkPerms)
		return
	}
	if merr != nil {
		d.add(checkQueue, broker.DoctorOK, fmt.Sprintf("queue %q exists in vhost %q: %d ready", r.Queue, r.VHost, ready), "")
		d.add(checkSettings, broker.DoctorNotChecked, "not checked: the management API did not answer, so the queue's type, arguments and policy are unknown", mgmtFix)
		d.add(checkSources, broker.DoctorNotChecked, "not checked: finding the queues that dead-letter here needs the management API", mgmtFix)
		d.add(checkPerms, broker.DoctorNotChecked, "not checked: the management API did not answer", permsVerify(r))
		return
	}
	info, ierr := d.ep.mgmt.Queue(ctx, r.VHost, r.Queue)
	if ierr != nil {
		d.add(checkQueue, broker.DoctorOK, fmt.Sprintf("queue %q exists in vhost %q: %d ready", r.Queue, r.VHost, ready), "")
		d.add(checkSettings, broker.DoctorWarn, "the management API did not describe the queue: "+ierr.Error(), "")
	} else {
		d.add(checkQueue, broker.DoctorOK, fmt.Sprintf("%s queue %q in vhost %q: %d ready, %d unacknowledged, %d consumer(s)", info.Type, r.Queue, r.VHost, ready, info.Unacked, info.Consumers), "")
		d.settings(info)
	}
	d.sources(ctx)
	d.permissions(ctx)
}

func serverName(conn *amqp091.Connection) string {
	p := conn.Properties
	s := fmt.Sprint(p["product"])
	if v, ok := p["version"].(string); ok {
		s += " " + v
	}
	if c, ok := p["cluster_name"].(string); ok && c != "" {
		s += ", cluster " + c
	}
	return s
}

func tagList(v any) string {
	switch t := v.(type) {
	case string:
		return t
	case []any:
		var ss []string
		for _, x := range t {
			ss = append(ss, fmt.Sprint(x))
		}
		return strings.Join(ss, ",")
	}
	return ""
}

func (d *doctorRun) credsFrom() string {
	switch d.r.credsFrom {
	case "env":
		return "credentials from " + EnvUsername + " / " + EnvPassword
	case "url":
		return "credentials from the reference"
	case "url-user":
		return "the user from the reference, the password from " + EnvPassword
	}
	return "no credentials given: RabbitMQ's guest/guest"
}

func (d *doctorRun) credsFix() string {
	if d.r.credsFrom == "url" {
		return "export " + EnvUsername + " and " + EnvPassword + " and drop USER:PASS@ from the reference"
	}
	return ""
}

// connectFix says what to check when the node did not answer.
func (d *doctorRun) connectFix(err error) string {
	r := d.r
	var ue x509.UnknownAuthorityError
	var he x509.HostnameError
	var ne net.Error
	msg := err.Error()
	switch {
	case errors.As(err, &ue) || strings.Contains(msg, "certificate signed by unknown authority"):
		return "the server's certificate is signed by a CA this shell does not trust: pass --amqp-ca CA.pem (the CA bundle of the RabbitMQ TLS listener)"
	case errors.As(err, &he) || strings.Contains(msg, "certificate is valid for"):
		return "the server's certificate does not name " + r.Host + ": connect with the host name the certificate carries"
	case strings.Contains(msg, "connection refused"):
		return fmt.Sprintf("nothing listens on %s: check the host and port in the reference (RabbitMQ listens on 5672 for amqp://, 5671 for amqps://) and that the node runs (rabbitmq-diagnostics -q ping on it)", r.HostPort())
	case errors.As(err, &ne) && ne.Timeout(), strings.Contains(msg, "i/o timeout"):
		return fmt.Sprintf("%s did not answer in time: check the host and port, and that a firewall or security group lets this shell reach it", r.HostPort())
	case strings.Contains(msg, "no such host"):
		return "the host name does not resolve: check it in the reference"
	case !r.TLS && (strings.Contains(msg, "EOF") || strings.Contains(msg, "reset by peer") || strings.Contains(msg, "frame")):
		return fmt.Sprintf("%s answered but not as an AMQP listener: if it is RabbitMQ's TLS port (5671), write amqps://", r.HostPort())
	}
	return "check the host and port in the reference, and that the node runs and can be reached from this shell"
}

// tls says what travels in clear.
func (d *doctorRun) tls() {
	r := d.r
	mgmt := d.ep.mgmt.base
	var warns []string
	var detail string
	switch {
	case r.TLS:
		detail = "amqps://: TLS to " + r.HostPort() + ", the server certificate verified against the system roots"
		if d.ep.cfg.CAFile != "" {
			detail += " and --amqp-ca " + d.ep.cfg.CAFile
		}
	case loopback(r.Host):
		detail = "plain amqp:// to " + r.Host + ", a loopback address: nothing leaves this machine"
	default:
		detail = "plain amqp:// to " + r.Host
		warns = append(warns, "the password (SASL PLAIN) and every message travel unencrypted to "+r.HostPort())
	}
	if mgmt.Scheme == "http" && !loopback(mgmt.Hostname()) {
		warns = append(warns, "the management API "+d.ep.mgmt.URL()+" is plain http: the password travels in every request's basic-auth header")
	}
	if len(warns) == 0 {
		d.add(checkTLS, broker.DoctorOK, detail, "")
		return
	}
	var fix []string
	if !r.TLS && !loopback(r.Host) {
		fix = append(fix, "use amqps://"+r.Host+":5671/… (RabbitMQ's TLS listener; --amqp-ca for a private CA)")
	}
	if mgmt.Scheme == "http" && !loopback(mgmt.Hostname()) {
		fix = append(fix, "pass --amqp-management-url https://"+mgmt.Hostname()+":15671 (the management plugin's TLS listener)")
	}
	d.add(checkTLS, broker.DoctorWarn, detail+": "+strings.Join(warns, "; "), strings.Join(fix, "; "))
}

func loopback(host string) bool {
	if strings.EqualFold(host, "localhost") || strings.HasSuffix(strings.ToLower(host), ".localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// settings describes the queue's type, arguments and policy, and warns
// about what loses dead letters or makes reading it unsafe.
func (d *doctorRun) settings(q QueueInfo) {
	var facts, warns, fixes []string
	facts = append(facts, "type "+q.Type)
	if q.Policy != "" {
		facts = append(facts, "policy "+q.Policy)
	}
	if q.OperatorPolicy != "" {
		facts = append(facts, "operator policy "+q.OperatorPolicy)
	}
	dlx, hasDLX := q.DeadLetterExchange()
	if hasDLX {
		facts = append(facts, fmt.Sprintf("dead-letter-exchange %q", dlx))
	} else {
		facts = append(facts, "no dead-letter-exchange")
	}
	if l, ok := q.DeliveryLimit(); ok {
		facts = append(facts, fmt.Sprintf("delivery-limit %d", l))
	}
	ttl, hasTTL := q.MessageTTL()
	if hasTTL {
		facts = append(facts, fmt.Sprintf("message-ttl %s", time.Duration(ttl)*time.Millisecond))
	}
	ml, hasML := q.MaxLength()
	mlb, hasMLB := q.MaxLengthBytes()
	if hasML {
		facts = append(facts, fmt.Sprintf("max-length %d", ml))
	}
	if hasMLB {
		facts = append(facts, fmt.Sprintf("max-length-bytes %d", mlb))
	}
	if hasML || hasMLB {
		facts = append(facts, "overflow "+q.Overflow())
	} else {
		facts = append(facts, "no length limit")
	}
	policy := func(key, value string) string {
		return fmt.Sprintf(`rabbitmqctl set_policy -p %s --apply-to queues %s-%s '^%s$' '{"%s":%s}'`, shellQuote(q.VHost), policySafe(q.Name), key, regexpQuote(q.Name), key, value)
	}
	if err := CheckPeekSafe(q); err != nil {
		warns = append(warns, "a quorum queue with a delivery limit: every peek (sample, group, classify) requeues, which counts toward it, so dlqctl refuses to peek")
		fixes = append(fixes, "lift the limit with a policy ("+policy("delivery-limit", "-1")+" on RabbitMQ 4.x) or read with archive, which acknowledges")
	}
	if q.Type == TypeStream {
		warns = append(warns, "a stream: reading removes nothing, so redrive and archive --delete cannot take messages out of it")
		fixes = append(fixes, "sample, group and classify read it by offset; move its messages with a stream consumer of your own")
	}
	if hasTTL && !hasDLX {
		warns = append(warns, fmt.Sprintf("dead letters are deleted after %s (message-ttl, and no dead-letter-exchange of its own)", time.Duration(ttl)*time.Millisecond))
		fixes = append(fixes, "remove the TTL from the DLQ's arguments or policy, or archive before it runs out (dlqctl archive)")
	}
	if (hasML || hasMLB) && !hasDLX {
		switch q.Overflow() {
		case "drop-head":
			warns = append(warns, "when full, the DLQ drops its oldest dead letters (overflow drop-head)")
			fixes = append(fixes, "raise the limit, or archive and empty the DLQ before it fills")
		default:
			warns = append(warns, "when full, the DLQ refuses new dead letters (overflow "+q.Overflow()+"), which the source queues then lose (dead-lettering is at-most-once unless the source is a quorum queue with dead-letter-strategy at-least-once)")
			fixes = append(fixes, "raise the limit, or archive and empty the DLQ before it fills")
		}
	}
	detail := strings.Join(facts, ", ")
	if len(q.Arguments) > 0 {
		var args []string
		for k, v := range q.Arguments {
			args = append(args, fmt.Sprintf("%s=%v", k, v))
		}
		slices.Sort(args)
		detail += "; arguments " + strings.Join(args, " ")
	}
	if len(warns) == 0 {
		d.add(checkSettings, broker.DoctorOK, detail, "")
		return
	}
	d.add(checkSettings, broker.DoctorWarn, detail+": "+strings.Join(warns, "; "), strings.Join(fixes, "; "))
}

// sources says which queues dead-letter into the queue.
func (d *doctorRun) sources(ctx context.Context) {
	r := d.r
	topo, err := LoadTopology(ctx, d.ep.mgmt, r.VHost)
	if err != nil {
		d.add(checkSources, broker.DoctorWarn, "could not read the vhost's queues, exchanges and bindings: "+err.Error(), "")
		return
	}
	for _, q := range DeadLetterQueues(topo) {
		if q.Queue.Name == r.Queue {
			d.add(checkSources, broker.DoctorOK, fmt.Sprintf("%d queue(s) dead-letter into %q: %s", len(q.Sources), r.Queue, strings.Join(q.Sources, ", ")), "")
			return
		}
	}
	d.add(checkSources, broker.DoctorWarn,
		fmt.Sprintf("no queue of vhost %q dead-letters into %q through its dead-letter-exchange and the bindings: is it the DLQ?", r.VHost, r.Queue),
		fmt.Sprintf("check the name: dlqctl queues amqp://%s/%s/ lists the vhost's dead-letter queues (a queue that a consumer's recoverer fills by publishing is not listed: redrive it --to a queue or exchange)", r.HostPort(), url.PathEscape(r.VHost)))
}

// userPermissions is one /api/permissions entry.
type userPermissions struct {
	Configure string `json:"configure"`
	Write     string `json:"write"`
	Read      string `json:"read"`
}

// permissions checks the user's vhost permissions against the queue, when
// the management API shows them (to administrators).
func (d *doctorRun) permissions(ctx context.Context) {
	r := d.r
	var p userPermissions
	err := d.ep.mgmt.get(ctx, &p, "permissions", r.VHost, r.user)
	if err != nil {
		d.add(checkPerms, broker.DoctorNotChecked, "not checked: the management API shows a user's permissions only to administrators ("+shortErr(err)+")", permsVerify(r))
		return
	}
	read, rerr := regexp.Compile(p.Read)
	if rerr != nil {
		d.add(checkPerms, broker.DoctorNotChecked, fmt.Sprintf("not checked: the read permission %q is not a pattern dlqctl can evaluate", p.Read), permsVerify(r))
		return
	}
	detail := fmt.Sprintf("user %q on vhost %q: configure %q, write %q, read %q", r.user, r.VHost, p.Configure, p.Write, p.Read)
	setPerms := fmt.Sprintf("rabbitmqctl set_permissions -p %s %s %s %s %s", shellQuote(r.VHost), shellQuote(r.user), shellQuote(p.Configure), shellQuote(orAll(p.Write)), shellQuote(orAll(p.Read)))
	switch {
	case p.Read == "" || !read.MatchString(r.Queue):
		d.add(checkPerms, broker.DoctorFail, detail+fmt.Sprintf(": the read permission does not cover queue %q, so sample, redrive and archive are refused", r.Queue), setPerms)
	case p.Write == "":
		d.add(checkPerms, broker.DoctorWarn, detail+": the user may read the DLQ but publish to no exchange, so redrive and restore are refused", setPerms)
	default:
		d.add(checkPerms, broker.DoctorOK, detail+fmt.Sprintf(": reading (and acknowledging) %q is allowed; a redrive or restore publishes to exchanges the write pattern must match", r.Queue), "")
	}
}

func orAll(s string) string {
	if s == "" {
		return ".*"
	}
	return s
}

func permsVerify(r Ref) string {
	return fmt.Sprintf("verify with rabbitmqctl list_user_permissions %s: dlqctl needs read on the DLQ (sample, redrive, archive) and write on the exchanges it publishes to (redrive, restore); it needs no configure permission", shellQuote(r.user))
}

func shortErr(err error) string {
	s := err.Error()
	if i := strings.Index(s, ": "); i > 0 && errors.Is(err, ErrAuth) {
		s = s[i+2:]
	}
	if len(s) > 160 {
		s = s[:160] + "…"
	}
	return s
}
