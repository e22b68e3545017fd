package doctor

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/iam"
)

// IAMAPI is IAM's policy simulator: it answers whether the principal's
// identity policies allow an action on a resource, without calling it.
type IAMAPI interface {
	SimulatePrincipalPolicy(context.Context, *iam.SimulatePrincipalPolicyInput, ...func(*iam.Options)) (*iam.SimulatePrincipalPolicyOutput, error)
}

// simulate asks IAM's policy simulator about actions that cannot be
// proven without changing something. It returns one check per action, or
// nil when the simulator cannot be used (no IAM client, a principal it
// cannot take, the simulator itself denied): then the caller reports them
// as not checked, with why in note.
func (p *Prober) simulate(ctx context.Context, name string, actions []string, resource, on string) (checks []Check, note string) {
	if p.IAM == nil {
		return nil, ""
	}
	principal := roleARN(p.Principal)
	if principal == "" {
		return nil, ""
	}
	cctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	in := &iam.SimulatePrincipalPolicyInput{PolicySourceArn: aws.String(principal), ActionNames: actions, ResourceArns: []string{resource}}
	decisions := map[string]string{}
	pager := iam.NewSimulatePrincipalPolicyPaginator(p.IAM, in)
	for pager.HasMorePages() {
		page, err := pager.NextPage(cctx)
		if err != nil {
			if denied(err) {
				return nil, "iam:SimulatePrincipalPolicy is not allowed to this principal, so IAM could not be asked either"
			}
			return nil, "IAM's policy simulator failed: " + short(err)
		}
		for _, r := range page.EvaluationResults {
			decisions[aws.ToString(r.EvalActionName)] = string(r.EvalDecision)
		}
	}
	for _, a := range actions {
		c := Check{Name: a, Action: a, Resource: resource, Roles: p.rolesNeeding(a, on)}
		if len(c.Roles) == 0 {
			c.Roles = p.rolesFor([]string{a}, on)
		}
		switch d := decisions[a]; d {
		case "allowed":
			c.Status = OK
			c.Detail = fmt.Sprintf("allowed for %s by IAM's policy simulator (identity policies; not called: it would change %s)", principal, name)
		case "":
			c.Status = NotChecked
			c.Detail = "IAM's policy simulator gave no answer for it"
			c.Fix = p.verifyHint([]string{a}, resource)
		default:
			c.Status = Fail
			c.Detail = fmt.Sprintf("DENIED for %s by IAM's policy simulator (%s)", principal, d)
			c.Fix = "grant " + a + " on " + resource + ": " + statement([]string{a}, resource) + " ('dlqctl help iam')"
		}
		checks = append(checks, c)
	}
	return checks, ""
}

// unproven reports actions that cannot be proven by a harmless call: by
// IAM's policy simulator when it can be asked, else as not checked with
// the statement to verify.
func (p *Prober) unproven(ctx context.Context, r *Report, name string, actions []string, resource, on, why string) {
	checks, note := p.simulate(ctx, name, actions, resource, on)
	if checks != nil {
		for _, c := range checks {
			r.Add(c)
		}
		return
	}
	detail := strings.Join(actions, ", ") + " not checked: " + why
	if note != "" {
		detail += "; " + note
	}
	n := "sqs: moving messages"
	if len(actions) == 1 {
		n = actions[0]
	}
	r.Add(Check{Name: n, Status: NotChecked, Resource: resource, Action: strings.Join(actions, ","), Roles: p.rolesFor(actions, on),
		Detail: detail, Fix: p.verifyHint(actions, resource)})
}
