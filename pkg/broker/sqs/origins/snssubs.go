package origins

import (
	"context"
	"sort"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sns"
)

// subscriptionDLQ is a confirmed SNS subscription whose RedrivePolicy
// names a dead-letter queue.
type subscriptionDLQ struct{ arn, topic, dlq string }

// subscriptionDLQs lists the account's confirmed subscriptions (not
// PendingConfirmation or Deleted) and reads each one's RedrivePolicy:
// ListSubscriptions does not return it, so one GetSubscriptionAttributes
// per subscription, 8 at a time. It keeps those whose DLQ ARN keep
// accepts, sorted by subscription ARN. wrap names the failed call
// (action, resource) in the caller's words; a subscription deleted
// meanwhile is skipped.
func subscriptionDLQs(ctx context.Context, c *sns.Client, keep func(dlq string) bool, wrap func(action, resource string, err error) error) ([]subscriptionDLQ, error) {
	var all []string
	p := sns.NewListSubscriptionsPaginator(c, &sns.ListSubscriptionsInput{})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, wrap("sns:ListSubscriptions", "*", err)
		}
		for _, s := range page.Subscriptions {
			if arn := aws.ToString(s.SubscriptionArn); strings.Count(arn, ":") == 6 {
				all = append(all, arn)
			}
		}
	}
	var (
		subs     []subscriptionDLQ
		mu       sync.Mutex
		firstErr error
		wg       sync.WaitGroup
	)
	sem := make(chan struct{}, 8)
	for _, arn := range all {
		wg.Add(1)
		sem <- struct{}{}
		go func(arn string) {
			defer func() { <-sem; wg.Done() }()
			out, err := c.GetSubscriptionAttributes(ctx, &sns.GetSubscriptionAttributesInput{SubscriptionArn: aws.String(arn)})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil && isNotFound(err):
			case err != nil:
				if firstErr == nil {
					firstErr = wrap("sns:GetSubscriptionAttributes", arn, err)
				}
			default:
				if d := redriveTarget(out.Attributes["RedrivePolicy"]); d != "" && keep(d) {
					subs = append(subs, subscriptionDLQ{arn: arn, topic: out.Attributes["TopicArn"], dlq: d})
				}
			}
		}(arn)
	}
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}
	sort.Slice(subs, func(i, j int) bool { return subs[i].arn < subs[j].arn })
	return subs, nil
}
