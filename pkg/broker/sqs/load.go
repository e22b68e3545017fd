package sqs

import (
	"context"
	"sync"
)

// loadConcurrency bounds concurrent GetQueueAttributes calls in LoadAll.
const loadConcurrency = 16

// LoadAll reads the attributes of every queue URL, at most 16 at a time,
// and returns the queues in the order of urls. Queues deleted between
// listing and reading are left out; any other error stops the load.
func (c *Client) LoadAll(ctx context.Context, urls []string) ([]*Queue, error) {
	queues := make([]*Queue, len(urls))
	sem := make(chan struct{}, loadConcurrency)
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
	)
	for i, u := range urls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			q := &Queue{URL: u}
			if err := c.Refresh(ctx, q); err != nil {
				if IsNotFound(err) {
					return
				}
				mu.Lock()
				if firstErr == nil {
					firstErr = WrapAWSError(err)
				}
				mu.Unlock()
				return
			}
			queues[i] = q
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}
	out := queues[:0]
	for _, q := range queues {
		if q != nil {
			out = append(out, q)
		}
	}
	return out, nil
}
