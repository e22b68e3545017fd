// Package doctor answers one question before anyone touches a DLQ: can this
// shell work on these queues, and if not, what to fix. It checks the
// environment (region, endpoints, credentials that match them, the state
// directory, the tools the runbooks use) and each IAM permission the
// runbooks need, with calls that change nothing. A permission that can
// only be proven by a call that changes something (a receive increments
// ApproximateReceiveCount; a send or delete moves messages) is reported as
// not checked, with the policy statement to verify. RabbitMQ and Kafka
// references are checked by their broker packages (broker.DoctorCheck,
// added with Report.AddBroker); the state directory and tool checks are
// the same for every broker.
package doctor

import (
	"sort"
	"strings"

	"github.com/dlqctl/dlqctl/pkg/broker"
)

// Status of one check.
type Status string

// Statuses, worst last.
const (
	OK         Status = "ok"
	NotChecked Status = "not-checked" // proving it would change something: verify the policy
	Warn       Status = "warn"
	Fail       Status = "fail"
)

// Check is one line of the report.
type Check struct {
	// Name is what was checked: "region", "credentials", "endpoints",
	// "state-dir", "tool jq", "sqs:GetQueueAttributes" …
	Name   string `json:"name"`
	Status Status `json:"status"`
	// Detail is what was found, one sentence.
	Detail string `json:"detail"`
	// Fix is what to do when the status is not ok ("" when nothing).
	Fix string `json:"fix,omitempty"`
	// Action and Resource name the IAM permission of a permission check.
	Action   string `json:"action,omitempty"`
	Resource string `json:"resource,omitempty"`
	// Roles are the docs/iam.md roles that need this permission.
	Roles []string `json:"roles,omitempty"`
}

// Report is the whole answer.
type Report struct {
	// OK is true when no check failed (warnings and not-checked
	// permissions do not fail).
	OK           bool    `json:"ok"`
	Region       string  `json:"region,omitempty"`
	RegionSource string  `json:"region_source,omitempty"`
	Account      string  `json:"account,omitempty"`
	Principal    string  `json:"principal,omitempty"`
	StateDir     string  `json:"state_dir,omitempty"`
	Checks       []Check `json:"checks"`
	// Counts per status.
	Counts map[Status]int `json:"counts"`
}

// Add appends a check.
func (r *Report) Add(c Check) { r.Checks = append(r.Checks, c) }

// AddBroker appends the checks a broker package made of a reference
// (RabbitMQ, Kafka: reaching it, logging in, the queue or topic, the
// permissions it reports).
func (r *Report) AddBroker(cs []broker.DoctorCheck) {
	for _, c := range cs {
		r.Add(Check{Name: c.Name, Status: Status(c.Status), Detail: c.Detail, Fix: c.Fix, Resource: c.Resource})
	}
}

// Finish computes OK and the counts.
func (r *Report) Finish() {
	r.Counts = map[Status]int{OK: 0, NotChecked: 0, Warn: 0, Fail: 0}
	r.OK = true
	for _, c := range r.Checks {
		r.Counts[c.Status]++
		if c.Status == Fail {
			r.OK = false
		}
	}
	if r.Checks == nil {
		r.Checks = []Check{}
	}
}

// Roles of docs/iam.md.
const (
	RoleReadOnly  = "read-only"
	RoleOperator  = "operator"
	RoleArchivist = "archivist"
)

// AllRoles in docs/iam.md order.
var AllRoles = []string{RoleReadOnly, RoleOperator, RoleArchivist}

// Resource kinds a permission applies to.
const (
	OnAccount = "account" // ListQueues
	OnDLQ     = "dlq"
	OnDest    = "dest" // the DLQ's source queues (or --to)
	OnBucket  = "bucket"
	OnObjects = "objects"
	OnLogs    = "logs"
)

// Permission is one IAM action on one kind of resource, and the roles
// (docs/iam.md) that need it.
type Permission struct {
	Action string
	On     string
	Roles  []string
	// Probe says how it is proven: "" not provable without changing
	// something.
	Probe string
}

// Permissions the runbooks need, per role (docs/iam.md, "Policies per
// role"), with the harmless call that proves each where there is one.
var Permissions = []Permission{
	{"sqs:ListQueues", OnAccount, []string{RoleReadOnly}, "ListQueues (MaxResults 1)"},
	{"sqs:GetQueueUrl", OnDLQ, AllRoles, "GetQueueUrl"},
	{"sqs:GetQueueAttributes", OnDLQ, AllRoles, "GetQueueAttributes"},
	{"sqs:ListDeadLetterSourceQueues", OnDLQ, []string{RoleReadOnly, RoleOperator}, "ListDeadLetterSourceQueues"},
	{"sqs:ListMessageMoveTasks", OnDLQ, []string{RoleReadOnly, RoleOperator}, "ListMessageMoveTasks"},
	{"sqs:ReceiveMessage", OnDLQ, AllRoles, ""},
	{"sqs:ChangeMessageVisibility", OnDLQ, AllRoles, ""},
	{"sqs:DeleteMessage", OnDLQ, []string{RoleOperator, RoleArchivist}, ""},
	{"sqs:StartMessageMoveTask", OnDLQ, []string{RoleOperator}, ""},
	{"sqs:CancelMessageMoveTask", OnDLQ, []string{RoleOperator}, ""},
	{"sqs:GetQueueUrl", OnDest, []string{RoleOperator}, "GetQueueUrl"},
	{"sqs:GetQueueAttributes", OnDest, []string{RoleOperator}, "GetQueueAttributes"},
	{"sqs:ListMessageMoveTasks", OnDest, []string{RoleOperator}, "ListMessageMoveTasks"},
	{"sqs:SendMessage", OnDest, []string{RoleOperator}, ""},
	{"s3:ListBucket", OnBucket, AllRoles, "ListObjectsV2 (MaxKeys 1)"},
	{"s3:GetObject", OnObjects, AllRoles, "HeadObject"},
	{"s3:PutObject", OnObjects, []string{RoleArchivist}, ""},
	{"logs:FilterLogEvents", OnLogs, AllRoles, "FilterLogEvents (Limit 1)"},
}

// ParseRoles reads --role: a comma list of read-only, operator,
// archivist, or "all".
func ParseRoles(s string) ([]string, bool) {
	if strings.TrimSpace(s) == "" || s == "all" {
		return AllRoles, true
	}
	seen := map[string]bool{}
	for _, r := range strings.Split(s, ",") {
		r = strings.TrimSpace(r)
		switch r {
		case RoleReadOnly, RoleOperator, RoleArchivist:
			seen[r] = true
		case "triage", "readonly":
			seen[RoleReadOnly] = true
		default:
			return nil, false
		}
	}
	var out []string
	for _, r := range AllRoles {
		if seen[r] {
			out = append(out, r)
		}
	}
	return out, true
}

// needed returns the permissions any of roles needs, with the roles that
// need each among them.
func needed(roles []string) []Permission {
	want := map[string]bool{}
	for _, r := range roles {
		want[r] = true
	}
	var out []Permission
	for _, p := range Permissions {
		var rs []string
		for _, r := range p.Roles {
			if want[r] {
				rs = append(rs, r)
			}
		}
		if len(rs) > 0 {
			p.Roles = rs
			out = append(out, p)
		}
	}
	return out
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
