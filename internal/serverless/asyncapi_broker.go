package serverless

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strconv"
	"syscall"
	"time"

	"code.dny.dev/ssrf"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	amqp "github.com/rabbitmq/amqp091-go"
)

// The brokers `call: asyncapi` speaks to: NATS (core publish and subscribe) and AMQP 0-9-1
// (RabbitMQ). Connections are made for one call and closed after it, within the node's HTTP
// address rules (--http-allow and --http-deny, and no private address unless allowed by name).

// brokerDialTimeout bounds connecting to a broker and its handshake.
const brokerDialTimeout = 10 * time.Second

// outbound is a message to publish.
type outbound struct {
	payload []byte
	headers map[string]string
}

// inbound is a message a subscription received.
type inbound struct {
	payload       []byte
	headers       map[string]any
	correlationID string
}

// take is handed each message received; it says whether it took the message (or filtered it out)
// and whether the subscription has what it needs.
type take func(inbound) (stop, took bool, p *Problem)

// brokerCreds are the credentials of a call's authentication: basic (user and password) or
// bearer (a NATS token).
type brokerCreds struct {
	user, password, token string
}

// dialer connects to a broker's host within the node's address rules.
type dialer struct {
	ctx   context.Context
	guard func(network, address string, c syscall.RawConn) error
}

func (d *dialer) Dial(network, address string) (net.Conn, error) {
	nd := &net.Dialer{Timeout: brokerDialTimeout, ControlContext: func(_ context.Context, network, address string, c syscall.RawConn) error {
		if d.guard == nil {
			return nil
		}
		if err := d.guard(network, address, c); err != nil {
			return fmt.Errorf("%w: %w", errAddressRefused, err)
		}
		return nil
	}}
	conn, err := nd.DialContext(d.ctx, network, address)
	if err != nil {
		return nil, err
	}
	// The handshake is bounded too (AMQP clears the deadline once the connection is open).
	if err := conn.SetDeadline(time.Now().Add(brokerDialTimeout)); err != nil {
		conn.Close()
		return nil, err
	}
	return conn, nil
}

// brokerDialer is the dialer for a broker's host:port, or the Problem of a host the node's
// rules refuse.
func (r *run) brokerDialer(t *task, hostport string) (*dialer, *Problem) {
	host, _, _ := net.SplitHostPort(hostport)
	opts := r.prog.http.opts
	if err := opts.check(host); err != nil {
		return nil, &Problem{Type: errTypeCommunication, Status: 403, Title: "Host Not Allowed", Detail: err.Error(), Instance: t.path}
	}
	d := &dialer{ctx: r.ctx}
	if !opts.allowedByName(host) {
		d.guard = ssrf.New(ssrf.WithAnyPort()).Safe
	}
	return d, nil
}

// brokerFailed is the Problem of a broker that could not be reached or failed a call.
func brokerFailed(t *task, tg *asyncTarget, err error) *Problem {
	if errors.Is(err, errAddressRefused) {
		return &Problem{Type: errTypeCommunication, Status: 403, Title: "Address Not Allowed", Instance: t.path,
			Detail: fmt.Sprintf("broker host %s resolves to a private, loopback, link-local or reserved address; allow the host by name with --http-allow", tg.host)}
	}
	return &Problem{Type: errTypeCommunication, Status: 503, Title: "Broker Call Failed", Instance: t.path,
		Detail: fmt.Sprintf("%s broker %s: %v", tg.protocol, tg.host, err)}
}

// connectNATS opens a connection to a NATS server, without reconnecting.
func connectNATS(d *dialer, tg *asyncTarget, cr brokerCreds) (*nats.Conn, error) {
	opts := []nats.Option{nats.Name("cairn"), nats.SetCustomDialer(d), nats.NoReconnect(), nats.Timeout(brokerDialTimeout)}
	if cr.user != "" {
		opts = append(opts, nats.UserInfo(cr.user, cr.password))
	}
	if cr.token != "" {
		opts = append(opts, nats.Token(cr.token))
	}
	return nats.Connect("nats://"+tg.host, opts...)
}

// connectAMQP opens a connection to an AMQP 0-9-1 broker (guest/guest without credentials).
func connectAMQP(d *dialer, tg *asyncTarget, cr brokerCreds) (*amqp.Connection, error) {
	host, p, _ := net.SplitHostPort(tg.host)
	port, _ := strconv.Atoi(p)
	uri := amqp.URI{Scheme: "amqp", Host: host, Port: port, Username: "guest", Password: "guest", Vhost: "/"}
	if cr.user != "" {
		uri.Username, uri.Password = cr.user, cr.password
	}
	if tg.vhost != "" {
		uri.Vhost = tg.vhost
	}
	return amqp.DialConfig(uri.String(), amqp.Config{Dial: func(network, addr string) (net.Conn, error) { return d.Dial(network, addr) },
		Heartbeat: 10 * time.Second, Locale: "en_US", Properties: amqp.Table{"connection_name": "cairn"}})
}

// amqpRoute is where an AMQP call publishes: an exchange's routing key, or (with the default
// exchange) a queue; and the queue a subscription consumes ("" : a queue of its own, bound to the
// exchange with the address as routing key).
func amqpRoute(tg *asyncTarget) (exchange, key, queue string) {
	b := tg.amqp
	switch {
	case b == nil:
		return "", tg.address, tg.address
	case b.Is == "queue":
		q := b.Queue.Name
		if q == "" {
			q = tg.address
		}
		return "", q, q
	case b.Exchange.Name != "":
		return b.Exchange.Name, tg.address, b.Queue.Name
	}
	return "", tg.address, tg.address
}

// publish sends one message and waits for the broker to take it: a NATS flush (or, on a subject
// a JetStream stream keeps, the stream's acknowledgement), an AMQP publisher confirm (a message no queue takes is returned, and faults the call).
func publish(ctx context.Context, d *dialer, tg *asyncTarget, cr brokerCreds, m outbound) error {
	if tg.protocol == "nats" {
		nc, err := connectNATS(d, tg, cr)
		if err != nil {
			return err
		}
		defer nc.Close()
		msg := nats.NewMsg(tg.address)
		msg.Data = m.payload
		for k, v := range m.headers {
			msg.Header.Set(k, v)
		}
		// On a subject a JetStream stream keeps, the stream's acknowledgement says it is stored.
		if js, err := jetstream.New(nc); err == nil {
			lookup, cancel := context.WithTimeout(ctx, 2*time.Second)
			_, err := js.StreamNameBySubject(lookup, tg.address)
			cancel()
			if err == nil {
				_, err := js.PublishMsg(ctx, msg)
				return err
			}
		}
		if err := nc.PublishMsg(msg); err != nil {
			return err
		}
		return nc.FlushWithContext(ctx)
	}
	conn, err := connectAMQP(d, tg, cr)
	if err != nil {
		return err
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		return err
	}
	if err := ch.Confirm(false); err != nil {
		return err
	}
	returned := ch.NotifyReturn(make(chan amqp.Return, 1))
	exchange, key, _ := amqpRoute(tg)
	headers := amqp.Table{}
	for k, v := range m.headers {
		headers[k] = v
	}
	pub := amqp.Publishing{ContentType: "application/json", DeliveryMode: amqp.Persistent, Headers: headers, Body: m.payload,
		CorrelationId: m.headers["correlationId"], Timestamp: time.Now()}
	conf, err := ch.PublishWithDeferredConfirmWithContext(ctx, exchange, key, true, false, pub)
	if err != nil {
		return err
	}
	acked, err := conf.WaitContext(ctx)
	if err != nil {
		return err
	}
	select {
	case ret := <-returned:
		return fmt.Errorf("the message was returned: %s (no queue is bound to %q)", ret.ReplyText, key)
	default:
	}
	if !acked {
		return errors.New("the broker refused the message (nack)")
	}
	return nil
}

// subscribe receives messages on the target, handing each to fn, until fn stops it, the time end
// comes (ended), ctx ends (its error is returned) or the broker fails. AMQP messages are
// acknowledged when the subscription stopped or ended, all at once: a subscription that fails or
// is cut off leaves them in the queue.
func subscribe(ctx context.Context, end time.Time, d *dialer, tg *asyncTarget, cr brokerCreds, prefetch int, fn take) (p *Problem, ended bool, err error) {
	endCtx, cancel := context.WithDeadline(ctx, end)
	defer cancel()
	timeUp := func() bool { return ctx.Err() == nil && endCtx.Err() != nil }
	if tg.protocol == "nats" {
		nc, err := connectNATS(d, tg, cr)
		if err != nil {
			return nil, false, err
		}
		defer nc.Close()
		sub, err := nc.SubscribeSync(tg.address)
		if err != nil {
			return nil, false, err
		}
		if err := nc.FlushWithContext(ctx); err != nil { // the subscription is in place
			return nil, false, err
		}
		for {
			msg, err := sub.NextMsgWithContext(endCtx)
			if err != nil {
				if timeUp() {
					return nil, true, nil
				}
				return nil, false, err
			}
			in := inbound{payload: msg.Data, headers: map[string]any{}}
			for k := range msg.Header {
				in.headers[k] = msg.Header.Get(k)
			}
			in.correlationID = msg.Header.Get("correlationId")
			if stop, _, p := fn(in); stop || p != nil {
				return p, false, nil
			}
		}
	}
	conn, err := connectAMQP(d, tg, cr)
	if err != nil {
		return nil, false, err
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		return nil, false, err
	}
	exchange, key, queue := amqpRoute(tg)
	if queue == "" {
		q, err := ch.QueueDeclare("", false, true, true, false, nil)
		if err != nil {
			return nil, false, err
		}
		if err := ch.QueueBind(q.Name, key, exchange, false, nil); err != nil {
			return nil, false, err
		}
		queue = q.Name
	} else if _, err := ch.QueueDeclare(queue, true, false, false, false, nil); err != nil {
		return nil, false, err
	}
	if err := ch.Qos(prefetch, 0, false); err != nil {
		return nil, false, err
	}
	deliveries, err := ch.ConsumeWithContext(ctx, queue, "", false, false, false, false, nil)
	if err != nil {
		return nil, false, err
	}
	var last uint64 // the tag of the last message handed to fn
	ack := func() error {
		if last == 0 {
			return nil
		}
		return ch.Ack(last, true)
	}
	for {
		select {
		case <-endCtx.Done():
			if timeUp() {
				return nil, true, ack()
			}
			return nil, false, ctx.Err()
		case dv, ok := <-deliveries:
			if !ok {
				return nil, false, errors.New("the broker closed the subscription")
			}
			in := inbound{payload: dv.Body, headers: map[string]any{}, correlationID: dv.CorrelationId}
			for k, v := range dv.Headers {
				in.headers[k] = headerValue(v)
			}
			stop, took, p := fn(in)
			if p != nil {
				return p, false, nil
			}
			if stop && !took { // left in the queue
				return nil, false, ack()
			}
			if !took { // filtered out: consumed now, so that it holds no room of the prefetch
				if err := dv.Ack(false); err != nil {
					return nil, false, err
				}
				continue
			}
			last = dv.DeliveryTag
			if stop {
				return nil, false, ack()
			}
		}
	}
}

// headerValue is an AMQP header's value as JSON can hold it.
func headerValue(v any) any {
	switch x := v.(type) {
	case string, bool, nil:
		return x
	case []byte:
		return string(x)
	case time.Time:
		return x.UTC().Format(time.RFC3339Nano)
	}
	if b, err := json.Marshal(v); err == nil {
		var out any
		if json.Unmarshal(b, &out) == nil {
			return out
		}
	}
	return fmt.Sprint(v)
}
