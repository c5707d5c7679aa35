package serverless

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/cairnflow/cairn/workflow"
)

// `call: asyncapi` publishes a message to, or subscribes to messages of, a channel an AsyncAPI
// document describes. The document is fetched when the task runs, like call: openapi's; its
// operation (3.0) or channel (2.6) gives the channel's address and the server (NATS or AMQP 0-9-1)
// it is on. A publish is one step: the message is sent and the broker's acknowledgement awaited
// (a step run again after a crash publishes again: at least once). A subscription runs within one
// step, bounded by its consume rules, the task's timeout and the node's AsyncAPIOptions.

const kindAsyncAPI = "asyncapi"

// AsyncAPIOptions bounds `call: asyncapi` tasks.
type AsyncAPIOptions struct {
	// MaxSubscribeTime bounds one subscription (DefaultAsyncSubscribeTime when zero).
	MaxSubscribeTime time.Duration
	// MaxMessages bounds the messages one subscription takes (DefaultAsyncMessages when zero).
	MaxMessages int
	// MaxBytes bounds one call: the payload it publishes, or the messages (payloads and headers)
	// a subscription takes, together (DefaultMaxResponseBytes when zero).
	MaxBytes int
}

// Defaults of AsyncAPIOptions.
const (
	DefaultAsyncSubscribeTime = 30 * time.Second
	DefaultAsyncMessages      = 1000
	// asyncStepMargin is the time a subscription's step has besides the subscription: fetching
	// the document, connecting, and recording the step.
	asyncStepMargin = 30 * time.Second
)

func (o AsyncAPIOptions) withDefaults() AsyncAPIOptions {
	if o.MaxSubscribeTime <= 0 {
		o.MaxSubscribeTime = DefaultAsyncSubscribeTime
	}
	if o.MaxMessages <= 0 {
		o.MaxMessages = DefaultAsyncMessages
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultMaxResponseBytes
	}
	return o
}

// asyncCall is a compiled `call: asyncapi`.
type asyncCall struct {
	document   string // the document's URI
	docAuth    *httpCall
	operation  string // 3.0
	channel    string // 2.6
	server     string
	serverVars *template
	protocol   string
	message    *template // a publish: {payload, headers}
	auth       *httpCall // the broker's credentials
	sub        *asyncSub // a subscription
}

// asyncSub is a compiled subscription.
type asyncSub struct {
	filter   *expr
	amount   int
	forDur   time.Duration
	while    *expr
	until    *expr
	itemAs   *template // foreach.output.as, on each message
	item, at string
	foreach  *task // the loop over the messages taken (listen_foreach.go)
}

var asyncProtocols = map[string]bool{"amqp": true, "amqp1": true, "anypointmq": true, "googlepubsub": true, "http": true, "ibmmq": true,
	"jms": true, "kafka": true, "mercure": true, "mqtt": true, "mqtt5": true, "nats": true, "pulsar": true, "redis": true, "sns": true,
	"solace": true, "sqs": true, "stomp": true, "ws": true}

func (c *compiler) compileAsyncAPI(t *task, def map[string]any, sc scope) error {
	t.kind = kindAsyncAPI
	ptr := t.path + "/with"
	with, ok := def["with"].(map[string]any)
	if !ok {
		return faultAt(ptr, "call: asyncapi needs with (document, operation or channel, message or subscription)")
	}
	a := &asyncCall{docAuth: &httpCall{}, auth: &httpCall{}}
	doc, _ := with["document"].(map[string]any)
	dptr := ptr + "/document/endpoint"
	endpoint := doc["endpoint"]
	if m, ok := endpoint.(map[string]any); ok {
		endpoint = m["uri"]
		if auth, ok := m["authentication"].(map[string]any); ok {
			if err := c.compileAuth(a.docAuth, auth, sc, dptr+"/authentication"); err != nil {
				return err
			}
		}
		dptr += "/uri"
	}
	a.document, _ = endpoint.(string)
	if u, err := url.Parse(a.document); a.document == "" || err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return faultAt(dptr, "call: asyncapi needs the http or https URI of its document")
	}
	a.operation, _ = with["operation"].(string)
	a.channel, _ = with["channel"].(string)
	if a.operation == "" && a.channel == "" {
		return faultAt(ptr+"/operation", "call: asyncapi needs operation (AsyncAPI 3) or channel (AsyncAPI 2)")
	}
	var err error
	if s, ok := with["server"].(map[string]any); ok {
		if a.server, _ = s["name"].(string); a.server == "" {
			return faultAt(ptr+"/server/name", "a server needs the name of one of the document's servers")
		}
		if v, ok := s["variables"]; ok {
			if _, isMap := v.(map[string]any); !isMap {
				return faultAt(ptr+"/server/variables", "variables must be an object")
			}
			if a.serverVars, err = compileTemplate(v, sc, ptr+"/server/variables"); err != nil {
				return err
			}
		}
	}
	if p, ok := with["protocol"]; ok {
		a.protocol, _ = p.(string)
		if !asyncProtocols[a.protocol] {
			return faultAt(ptr+"/protocol", "protocol %v is not an AsyncAPI protocol", p)
		}
	}
	if auth, ok := with["authentication"]; ok {
		m, isMap := auth.(map[string]any)
		if !isMap {
			return faultAt(ptr+"/authentication", "authentication must be an object: a scheme, or use and the name of one in use.authentications")
		}
		if err := c.compileAuth(a.auth, m, sc, ptr+"/authentication"); err != nil {
			return err
		}
	}
	msg, hasMsg := with["message"]
	sub, hasSub := with["subscription"]
	switch {
	case hasMsg == hasSub:
		return faultAt(ptr, "call: asyncapi needs either message (to publish) or subscription (to consume)")
	case hasMsg:
		m, isMap := msg.(map[string]any)
		if !isMap {
			return faultAt(ptr+"/message", "message must be an object (payload, headers)")
		}
		if h, ok := m["headers"]; ok {
			if s, isStr := h.(string); !isStr || !isStrict(s) {
				if _, isMap := h.(map[string]any); !isMap {
					return faultAt(ptr+"/message/headers", "headers must be an object or a runtime expression")
				}
			}
		}
		if a.message, err = compileTemplate(m, sc, ptr+"/message"); err != nil {
			return err
		}
	default:
		if a.sub, err = c.compileSubscription(t, sub, sc, ptr+"/subscription"); err != nil {
			return err
		}
	}
	t.async = a
	return nil
}

func (c *compiler) compileSubscription(t *task, raw any, sc scope, ptr string) (*asyncSub, error) {
	m, ok := raw.(map[string]any)
	if !ok {
		return nil, faultAt(ptr, "subscription must be an object (filter, consume, foreach)")
	}
	s := &asyncSub{item: "item", at: "index"}
	var err error
	if f, ok := m["filter"].(string); ok {
		if s.filter, err = compileExpr(f, sc, ptr+"/filter"); err != nil {
			return nil, err
		}
	}
	consume, ok := m["consume"].(map[string]any)
	if !ok {
		return nil, faultAt(ptr+"/consume", "a subscription needs consume (amount, while or until, and for)")
	}
	if v, ok := consume["amount"]; ok {
		n, isNum := v.(float64)
		if !isNum || n < 1 || n != float64(int(n)) || n > 1e6 {
			return nil, faultAt(ptr+"/consume/amount", "amount must be a whole number from 1 to 1000000")
		}
		s.amount = int(n)
	}
	if v, ok := consume["for"]; ok {
		if s.forDur, err = parseDuration(v, ptr+"/consume/for"); err != nil {
			return nil, err
		}
	}
	for key, dst := range map[string]**expr{"while": &s.while, "until": &s.until} {
		if v, ok := consume[key]; ok {
			src, isStr := v.(string)
			if !isStr {
				return nil, faultAt(ptr+"/consume/"+key, "%s must be a runtime expression", key)
			}
			if *dst, err = compileExpr(src, sc, ptr+"/consume/"+key); err != nil {
				return nil, err
			}
		}
	}
	if s.amount == 0 && s.while == nil && s.until == nil {
		return nil, faultAt(ptr+"/consume", "consume needs amount, while or until")
	}
	if raw, ok := m["foreach"]; ok {
		if err := c.compileSubscriptionForeach(t, s, raw, sc, ptr+"/foreach"); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// compileSubscriptionForeach compiles a subscription's foreach: output.as transforms each message
// as it is taken; do runs for each message taken, as a loop of its own (like listen's foreach),
// and the task's output is still the messages taken.
func (c *compiler) compileSubscriptionForeach(t *task, s *asyncSub, raw any, sc scope, ptr string) error {
	m, ok := raw.(map[string]any)
	if !ok {
		return faultAt(ptr, "foreach is an object with item, at, do and output")
	}
	if _, ok := m["export"]; ok {
		return faultAt(ptr+"/export", "foreach.export is not supported by cairn yet (use the task's own export)")
	}
	if v, ok := m["item"].(string); ok && v != "" {
		s.item = v
	}
	if v, ok := m["at"].(string); ok && v != "" {
		s.at = v
	}
	inner := sc.with(s.item, s.at)
	if o, ok := m["output"].(map[string]any); ok {
		if _, hasSchema := o["schema"]; hasSchema {
			return faultAt(ptr+"/output/schema", "foreach.output.schema is not supported by cairn yet")
		}
		if as, ok := o["as"]; ok {
			var err error
			if s.itemAs, err = compileValueOrExpr(as, inner, ptr+"/output/as"); err != nil {
				return err
			}
		}
	}
	if _, ok := m["do"]; !ok {
		return nil
	}
	if len(frameDataPrefix)+len(ptr) > workflow.MaxKeyLength {
		return faultAt(ptr, "the path of foreach may have at most %d bytes", workflow.MaxKeyLength-len(frameDataPrefix))
	}
	f := &task{name: t.name, path: ptr, kind: kindFor, forEach: s.item, forAt: s.at, itemsOut: true,
		then: t.then, outputAs: t.outputAs, outputSchema: t.outputSchema, exportAs: t.exportAs}
	body, err := c.compileList(m["do"], ptr+"/do", f, inner)
	if err != nil {
		return err
	}
	f.body = body
	s.foreach = f
	return nil
}

// runAsyncAPI runs a `call: asyncapi` task: it publishes, or subscribes and then completes (or
// runs its foreach over the messages taken).
func (r *run) runAsyncAPI(t *task, in any) target {
	a := t.async
	invalid := func(format string, args ...any) target {
		return r.fault(t, &Problem{Type: errTypeValidation, Status: 400, Title: "Invalid AsyncAPI Call", Detail: fmt.Sprintf(format, args...), Instance: t.path})
	}
	docURL, _ := url.Parse(a.document)
	raw, p := r.fetchResource(t, docURL, "application/json, application/yaml", a.docAuth, in, "AsyncAPI Document")
	if p != nil {
		return r.fault(t, p)
	}
	doc, err := parseAsyncAPI(raw)
	if err != nil {
		return invalid("the document at %s: %v", a.document, err)
	}
	var vars map[string]any
	if a.serverVars != nil {
		v, p := r.evalTpl(t, a.serverVars, in, nil)
		if p != nil {
			return r.fault(t, p)
		}
		vars, _ = v.(map[string]any)
	}
	tg, err := doc.target(a, vars)
	if err != nil {
		return invalid("the document at %s: %v", a.document, err)
	}
	creds := &httpRequest{}
	if p := r.evalAuth(t, a.auth, in, creds); p != nil {
		return r.fault(t, p)
	}
	cr := brokerCreds{user: creds.user, password: creds.password, token: creds.bearer}
	d, p := r.brokerDialer(t, tg.host)
	if p != nil {
		return r.fault(t, p)
	}
	if a.sub == nil {
		out, p := r.publishAsync(t, in, d, tg, cr)
		if p != nil {
			return r.fault(t, p)
		}
		return r.complete(t, in, out, t.then)
	}
	msgs, p, err := r.subscribeAsync(t, in, d, tg, cr)
	if err != nil {
		return target{leaf: t, stepErr: err}
	}
	if p != nil {
		return r.fault(t, p)
	}
	if a.sub.foreach != nil {
		return r.startForeach(t, in, msgs)
	}
	return r.complete(t, in, msgs, t.then)
}

// publishAsync publishes the call's message; its output is the message as published.
func (r *run) publishAsync(t *task, in any, d *dialer, tg *asyncTarget, cr brokerCreds) (any, *Problem) {
	v, p := r.evalTpl(t, t.async.message, in, nil)
	if p != nil {
		return nil, p
	}
	m, _ := v.(map[string]any)
	out := outbound{headers: map[string]string{}}
	if h, ok := m["headers"].(map[string]any); ok {
		for k, v := range h {
			out.headers[k] = scalar(v)
		}
	}
	switch x := m["payload"].(type) {
	case nil:
	case string:
		out.payload = []byte(x)
	default:
		b, err := json.Marshal(x)
		if err != nil {
			return nil, &Problem{Type: errTypeValidation, Status: 400, Title: "Invalid Message", Detail: err.Error(), Instance: t.path}
		}
		out.payload = b
	}
	if max := r.prog.async.withDefaults().MaxBytes; len(out.payload) > max {
		return nil, &Problem{Type: errTypeValidation, Status: 400, Title: "Message Too Large", Instance: t.path,
			Detail: fmt.Sprintf("the payload is larger than %d bytes", max)}
	}
	if err := publish(r.ctx, d, tg, cr, out); err != nil {
		return nil, r.brokerProblem(t, tg, err)
	}
	return map[string]any{"payload": m["payload"], "headers": m["headers"]}, nil
}

// brokerProblem is the Problem of a broker call that failed: at the task's deadline a timeout.
func (r *run) brokerProblem(t *task, tg *asyncTarget, err error) *Problem {
	if r.ctx.Err() != nil && errors.Is(r.ctx.Err(), context.DeadlineExceeded) {
		return timeoutProblem(t)
	}
	return brokerFailed(t, tg, err)
}

// subscribeAsync consumes messages until the subscription's consume rules say it is done: amount
// messages taken, while false or until true (evaluated on the messages taken so far), or its
// `for` elapsed. The node's AsyncAPIOptions bound the time and the messages of one subscription:
// reaching them ends a subscription with a foreach (its loop processes what came), and faults one
// without.
func (r *run) subscribeAsync(t *task, in any, d *dialer, tg *asyncTarget, cr brokerCreds) ([]any, *Problem, error) {
	s, lim := t.async.sub, r.prog.async.withDefaults()
	msgs := []any{}
	cond := func(x *expr) (bool, *Problem) {
		v, err := x.eval(r.ctx, msgs, r.vars(t, in, map[string]any{"$context": consumedContext(r.st.Context, msgs)}))
		if err != nil {
			return false, expressionProblem(t.path, err)
		}
		return truthy(v), nil
	}
	if s.while != nil {
		if ok, p := cond(s.while); p != nil || !ok {
			return msgs, p, nil
		}
	}
	limited, size := false, 0
	fn := func(m inbound) (bool, bool, *Problem) {
		n := len(m.payload) + int(jsonSize(m.headers, int64(lim.MaxBytes)))
		if n > lim.MaxBytes {
			return false, false, &Problem{Type: errTypeCommunication, Status: 502, Title: "Message Too Large", Instance: t.path,
				Detail: fmt.Sprintf("a message on %s is larger than %d bytes", tg.address, lim.MaxBytes)}
		}
		if size+n > lim.MaxBytes {
			// Not taken (an AMQP message stays in its queue): the subscription is full.
			limited = true
			return true, false, nil
		}
		var payload any
		if json.Unmarshal(m.payload, &payload) != nil {
			payload = string(m.payload)
		}
		msg := map[string]any{"payload": payload, "headers": m.headers}
		if m.correlationID != "" {
			msg["correlationId"] = m.correlationID
		}
		var item any = msg
		if s.filter != nil {
			v, err := s.filter.eval(r.ctx, msg, r.vars(t, in, nil))
			if err != nil {
				return false, false, expressionProblem(t.path+"/with/subscription/filter", err)
			}
			if !truthy(v) {
				return false, false, nil
			}
		}
		if s.itemAs != nil {
			v, p := r.evalTpl(t, s.itemAs, msg, map[string]any{"$" + s.item: msg, "$" + s.at: len(msgs)})
			if p != nil {
				return false, false, p
			}
			item = v
		}
		msgs, size = append(msgs, item), size+n
		switch {
		case s.amount > 0 && len(msgs) >= s.amount:
			return true, true, nil
		case s.until != nil:
			if ok, p := cond(s.until); p != nil || ok {
				return true, true, p
			}
		}
		if s.while != nil {
			if ok, p := cond(s.while); p != nil || !ok {
				return true, true, p
			}
		}
		if len(msgs) >= lim.MaxMessages {
			limited = true
			return true, true, nil
		}
		return false, true, nil
	}
	span := lim.MaxSubscribeTime
	if s.forDur > 0 && s.forDur <= span {
		span = s.forDur
	}
	// The messages taken stay unacknowledged until the subscription ends: the prefetch holds as
	// many as it may take.
	prefetch := min(lim.MaxMessages, 65535)
	if s.amount > 0 {
		prefetch = min(prefetch, s.amount)
	}
	p, ended, err := subscribe(r.ctx, time.Now().Add(span), d, tg, cr, prefetch, fn)
	switch {
	case p != nil:
		return nil, p, nil
	case err != nil && r.ctx.Err() != nil && !errors.Is(r.ctx.Err(), context.DeadlineExceeded):
		return nil, nil, err // the step was cut off (the node stops): it runs again
	case err != nil:
		return nil, r.brokerProblem(t, tg, err), nil
	case ended && (s.forDur == 0 || s.forDur > span), limited:
		if s.foreach != nil {
			return msgs, nil, nil
		}
		return nil, &Problem{Type: errTypeTimeout, Status: 408, Title: "Subscription Limit", Instance: t.path,
			Detail: fmt.Sprintf("the subscription reached the node's limit (%s, %d messages, %d bytes) before its consume rules ended it; only a subscription with foreach may end there", lim.MaxSubscribeTime, lim.MaxMessages, lim.MaxBytes)}, nil
	}
	return msgs, nil, nil
}

// consumedContext is $context as a subscription's while and until see it: the workflow's context
// with the messages taken so far as consumedMessages (and messages).
func consumedContext(ctx any, msgs []any) any {
	m, ok := ctx.(map[string]any)
	if !ok && ctx != nil {
		return ctx
	}
	out := make(map[string]any, len(m)+2)
	for k, v := range m {
		out[k] = v
	}
	out["consumedMessages"], out["messages"] = msgs, msgs
	return out
}
