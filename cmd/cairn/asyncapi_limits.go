package main

import (
	"time"

	"github.com/cairnflow/cairn/internal/serverless"
)

// asyncLimits bound the subscriptions of `call: asyncapi` tasks on this node (docs/serverless-workflow.md,
// "AsyncAPI"): a subscription holds a worker's slot while it runs.
type asyncLimits struct {
	subscribeTime time.Duration
	maxMessages   int
	maxBytes      int
}

// maxAsyncSubscribeTime bounds --asyncapi-subscribe-time.
const maxAsyncSubscribeTime = time.Hour

func (l *asyncLimits) register(fs *flagSet) {
	fs.DurationVar(&l.subscribeTime, "asyncapi-subscribe-time", serverless.DefaultAsyncSubscribeTime, "longest time one call: asyncapi subscription may run (its consume.for and the task's timeout bound it too); a subscription its consume rules have not ended by then faults with a timeout (408), unless it has a foreach, which then processes what came")
	fs.IntVar(&l.maxMessages, "asyncapi-max-messages", serverless.DefaultAsyncMessages, "most messages one call: asyncapi subscription takes (reached: as --asyncapi-subscribe-time)")
	fs.IntVar(&l.maxBytes, "asyncapi-max-bytes", serverless.DefaultMaxResponseBytes, "most payload bytes one call: asyncapi task publishes, or bytes of payloads and headers its subscription takes together (reached: as --asyncapi-subscribe-time)")
}

func (l *asyncLimits) check() error {
	if l.subscribeTime <= 0 || l.subscribeTime > maxAsyncSubscribeTime {
		return usagef("--asyncapi-subscribe-time must be positive and at most %s, not %s", maxAsyncSubscribeTime, l.subscribeTime)
	}
	if l.maxMessages <= 0 || l.maxMessages > 1_000_000 {
		return usagef("--asyncapi-max-messages must be from 1 to 1000000, not %d", l.maxMessages)
	}
	if l.maxBytes <= 0 {
		return usagef("--asyncapi-max-bytes must be positive, not %d", l.maxBytes)
	}
	return nil
}

func (l *asyncLimits) options() serverless.AsyncAPIOptions {
	return serverless.AsyncAPIOptions{MaxSubscribeTime: l.subscribeTime, MaxMessages: l.maxMessages, MaxBytes: l.maxBytes}
}
