package serverless_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/internal/serverless"
	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
)

// brokerURL is the URL of a broker for the tests (env, else def); the test is skipped when it
// does not answer, and fails under CI=true, where .ci/run starts it.
func brokerURL(t *testing.T, env, def string) *url.URL {
	t.Helper()
	raw := os.Getenv(env)
	if raw == "" {
		raw = def
	}
	u, err := url.Parse(raw)
	require.NoError(t, err)
	conn, err := net.DialTimeout("tcp", u.Host, 2*time.Second)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("no broker at %s (%s): %v", u.Host, env, err)
		}
		t.Skipf("no broker at %s (%s): %v", u.Host, env, err)
	}
	conn.Close()
	return u
}

// asyncEnv is what the AsyncAPI tests share: the brokers, and a server of the documents of
// testdata whose channels are named for one test ({{SUFFIX}} is the last part of the path).
type asyncEnv struct {
	nats, amqp *url.URL
	docs       *httptest.Server
}

func newAsyncEnv(t *testing.T) *asyncEnv {
	t.Helper()
	e := &asyncEnv{nats: brokerURL(t, "TEST_NATS_URL", "nats://127.0.0.1:4222"), amqp: brokerURL(t, "TEST_AMQP_URL", "amqp://guest:guest@127.0.0.1:5672/")}
	e.docs = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name, suffix, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
		b, err := os.ReadFile("testdata/" + name)
		if err != nil {
			http.NotFound(w, r)
			return
		}
		doc := strings.NewReplacer("{{NATS}}", e.nats.Host, "{{AMQP}}", e.amqp.Host, "{{SUFFIX}}", suffix).Replace(string(b))
		w.Header().Set("Content-Type", "application/yaml")
		_, _ = w.Write([]byte(doc))
	}))
	t.Cleanup(e.docs.Close)
	return e
}

func uniqueSuffix() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// call is a document of one `call: asyncapi` task on the document name (its channels named by
// suffix) with the given lines of with.
func (e *asyncEnv) call(name, doc, suffix, with string) string {
	return fmt.Sprintf(`
document: {dsl: '1.0.0', namespace: asyncapi, name: %s, version: '1.0.0'}
do:
  - call:
      call: asyncapi
      with:
        document: {endpoint: '%s/%s/%s'}
%s`, name, e.docs.URL, doc, suffix, with)
}

func (e *asyncEnv) natsConn(t *testing.T) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect(e.nats.String())
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	return nc
}

func (e *asyncEnv) amqpChannel(t *testing.T) *amqp.Channel {
	t.Helper()
	conn, err := amqp.Dial(e.amqp.String())
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	ch, err := conn.Channel()
	require.NoError(t, err)
	return ch
}

// queue declares a durable queue as the subscriptions do, deleted when the test ends.
func (e *asyncEnv) queue(t *testing.T, ch *amqp.Channel, name string) {
	t.Helper()
	_, err := ch.QueueDeclare(name, true, false, false, false, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _, _ = ch.QueueDelete(name, false, false, false) })
}

// publishUntil publishes numbered messages to a NATS subject every 20 ms until stop is closed.
func publishUntil(t *testing.T, nc *nats.Conn, subject string, stop <-chan struct{}, body func(n int) string) {
	go func() {
		for n := 1; ; n++ {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			_ = nc.Publish(subject, []byte(body(n)))
		}
	}()
}

func payloads(t *testing.T, out any) []map[string]any {
	t.Helper()
	list, ok := out.([]any)
	require.True(t, ok, "%v", out)
	var ps []map[string]any
	for _, m := range list {
		p, _ := m.(map[string]any)["payload"].(map[string]any)
		ps = append(ps, p)
	}
	return ps
}

// TestAsyncAPICall publishes and subscribes through AsyncAPI documents served by a local server,
// on the real NATS and RabbitMQ brokers, on every backend.
func TestAsyncAPICall(t *testing.T) {
	t.Parallel()
	e := newAsyncEnv(t)
	opts := serverless.Options{HTTP: serverless.HTTPOptions{Allow: []string{"127.0.0.1"}},
		Secrets: map[string]any{"amqp": map[string]any{"user": e.amqp.User.Username(), "password": func() string { p, _ := e.amqp.User.Password(); return p }()}}}

	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		n := newNodeWith(t, store, opts)
		n.startWorker(t)
		run := func(t *testing.T, doc, input string) *persistence.Workflow {
			def := n.deploy(t, doc)
			return n.waitEnded(t, n.start(t, def.Type, input).ID)
		}
		nc := e.natsConn(t)
		ch := e.amqpChannel(t)

		t.Run("publish on NATS", func(t *testing.T) {
			sfx := uniqueSuffix()
			sub, err := nc.SubscribeSync("cairn.test." + sfx + ".greetings")
			require.NoError(t, err)
			require.NoError(t, nc.Flush())
			w := run(t, e.call("nats-publish", "asyncapi-v3.yaml", sfx, `
        operation: sendGreeting
        protocol: nats
        message:
          payload: {greeting: '${ "hello " + .name }'}
          headers: {trace: '${ .trace }'}`), `{"name":"ann","trace":"t-1"}`)
			require.Equal(t, persistence.StatusFinished, w.Status, lastError(w))
			msg, err := sub.NextMsg(5 * time.Second)
			require.NoError(t, err)
			require.JSONEq(t, `{"greeting":"hello ann"}`, string(msg.Data))
			require.Equal(t, "t-1", msg.Header.Get("trace"))
			require.Equal(t, map[string]any{"payload": map[string]any{"greeting": "hello ann"}, "headers": map[string]any{"trace": "t-1"}}, output(t, w))
		})

		t.Run("publish on NATS to a JetStream stream", func(t *testing.T) {
			sfx := uniqueSuffix()
			js, err := jetstream.New(nc)
			require.NoError(t, err)
			ctx := context.Background()
			stream, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "cairn-test-" + sfx, Subjects: []string{"cairn.test." + sfx + ".stored"}, Storage: jetstream.MemoryStorage})
			require.NoError(t, err)
			t.Cleanup(func() { _ = js.DeleteStream(ctx, "cairn-test-"+sfx) })
			w := run(t, e.call("nats-stream", "asyncapi-v3.yaml", sfx, `
        operation: storeGreeting
        message: {payload: {stored: true}}`), `{}`)
			require.Equal(t, persistence.StatusFinished, w.Status, lastError(w))
			msg, err := stream.GetLastMsgForSubject(ctx, "cairn.test."+sfx+".stored")
			require.NoError(t, err)
			require.JSONEq(t, `{"stored":true}`, string(msg.Data))
		})

		t.Run("publish on AMQP with basic authentication", func(t *testing.T) {
			sfx := uniqueSuffix()
			q := "cairn-test-" + sfx + "-orders"
			e.queue(t, ch, q)
			w := run(t, e.call("amqp-publish", "asyncapi-v3.yaml", sfx, `
        operation: sendOrder
        authentication: {basic: {username: '${ $secret.amqp.user }', password: '${ $secret.amqp.password }'}}
        message:
          payload: {order: '${ .id }'}
          headers: {source: cairn}`), `{"id":"o-7"}`)
			require.Equal(t, persistence.StatusFinished, w.Status, lastError(w))
			got, ok, err := ch.Get(q, true)
			require.NoError(t, err)
			require.True(t, ok, "the queue has the message")
			require.JSONEq(t, `{"order":"o-7"}`, string(got.Body))
			require.Equal(t, "cairn", got.Headers["source"])
		})

		t.Run("an AMQP message no queue takes faults", func(t *testing.T) {
			w := run(t, e.call("amqp-unroutable", "asyncapi-v3.yaml", uniqueSuffix(), `
        operation: sendOrder
        message: {payload: {lost: true}}`), `{}`)
			require.Equal(t, persistence.StatusFailed, w.Status)
			p := problemFields(t, w)
			require.Equal(t, "https://serverlessworkflow.io/spec/1.0.0/errors/communication", p["type"])
			require.Contains(t, p["detail"], "returned", "%v", p)
		})

		t.Run("publish through an AsyncAPI 2.6 channel", func(t *testing.T) {
			sfx := uniqueSuffix()
			q := "cairn-test-" + sfx + "-v2"
			e.queue(t, ch, q)
			w := run(t, e.call("amqp-v2", "asyncapi-v2.yaml", sfx, `
        channel: `+q+`
        message: {payload: {text: plain}}`), `{}`)
			require.Equal(t, persistence.StatusFinished, w.Status, lastError(w))
			got, ok, err := ch.Get(q, true)
			require.NoError(t, err)
			require.True(t, ok)
			require.JSONEq(t, `{"text":"plain"}`, string(got.Body))
		})

		t.Run("subscribe on AMQP for an amount", func(t *testing.T) {
			sfx := uniqueSuffix()
			q := "cairn-test-" + sfx + "-orders"
			e.queue(t, ch, q)
			for i := 1; i <= 5; i++ {
				require.NoError(t, ch.PublishWithContext(context.Background(), "", q, false, false,
					amqp.Publishing{Body: []byte(fmt.Sprintf(`{"n":%d}`, i)), CorrelationId: fmt.Sprintf("c-%d", i)}))
			}
			w := run(t, e.call("amqp-amount", "asyncapi-v3.yaml", sfx, `
        operation: receiveOrders
        subscription:
          filter: '${ .payload.n != 2 }'
          consume: {amount: 3}`), `{}`)
			require.Equal(t, persistence.StatusFinished, w.Status, lastError(w))
			out := output(t, w)
			require.Equal(t, []map[string]any{{"n": float64(1)}, {"n": float64(3)}, {"n": float64(4)}}, payloads(t, out), "the filter drops n=2")
			require.Equal(t, "c-3", out.([]any)[1].(map[string]any)["correlationId"])
			q5, err := ch.QueueDeclarePassive(q, true, false, false, false, nil)
			require.NoError(t, err)
			require.Equal(t, 1, q5.Messages, "the messages taken (and filtered) were acknowledged, the rest left in the queue")
		})

		t.Run("subscribe on AMQP until a message says stop", func(t *testing.T) {
			sfx := uniqueSuffix()
			q := "cairn-test-" + sfx + "-orders"
			e.queue(t, ch, q)
			for i, stop := range []bool{false, false, true, false} {
				require.NoError(t, ch.PublishWithContext(context.Background(), "", q, false, false,
					amqp.Publishing{Body: []byte(fmt.Sprintf(`{"n":%d,"stop":%t}`, i+1, stop))}))
			}
			w := run(t, e.call("amqp-until", "asyncapi-v3.yaml", sfx, `
        operation: receiveOrders
        subscription:
          consume:
            until: '${ .[-1].payload.stop }'
            for: {seconds: 20}`), `{}`)
			require.Equal(t, persistence.StatusFinished, w.Status, lastError(w))
			require.Equal(t, []map[string]any{{"n": float64(1), "stop": false}, {"n": float64(2), "stop": false}, {"n": float64(3), "stop": true}}, payloads(t, output(t, w)))
		})

		t.Run("subscribe on NATS until, reading the messages as $context.consumedMessages", func(t *testing.T) {
			sfx := uniqueSuffix()
			stop := make(chan struct{})
			defer close(stop)
			publishUntil(t, nc, "cairn.test."+sfx+".greetings", stop, func(n int) string { return fmt.Sprintf(`{"n":%d,"last":%t}`, n, n%4 == 0) })
			w := run(t, e.call("nats-until", "asyncapi-v3.yaml", sfx, `
        operation: receiveGreetings
        subscription:
          consume:
            until: '${ $context.consumedMessages[-1].payload.last }'`), `{}`)
			require.Equal(t, persistence.StatusFinished, w.Status, lastError(w))
			ps := payloads(t, output(t, w))
			require.NotEmpty(t, ps)
			for i, p := range ps {
				require.Equal(t, i == len(ps)-1, p["last"], "only the last message taken ends the subscription: %v", ps)
				if i > 0 {
					require.Equal(t, ps[i-1]["n"].(float64)+1, p["n"], "in order, none lost: %v", ps)
				}
			}
		})

		t.Run("subscribe on NATS while, with foreach", func(t *testing.T) {
			sfx := uniqueSuffix()
			stop := make(chan struct{})
			defer close(stop)
			publishUntil(t, nc, "cairn.test."+sfx+".greetings", stop, func(n int) string { return fmt.Sprintf(`{"n":%d}`, n) })
			w := run(t, e.call("nats-foreach", "asyncapi-v3.yaml", sfx, `
        operation: receiveGreetings
        subscription:
          consume:
            while: '${ length < 3 }'
          foreach:
            item: message
            at: i
            output:
              as: '${ $message.payload.n }'
            do:
              - count:
                  set: {at: '${ $i }', item: '${ $message }'}
                  export: {as: '${ $context + {seen: (($context.seen // []) + [$message]), at: $i} }'}
  - report:
      set: {messages: '${ . }', seen: '${ $context.seen }', at: '${ $context.at }'}`), `{}`)
			require.Equal(t, persistence.StatusFinished, w.Status, lastError(w))
			out, _ := output(t, w).(map[string]any)
			msgs, _ := out["messages"].([]any)
			require.Len(t, msgs, 3, "%v", out)
			require.IsType(t, float64(0), msgs[0], "each message is transformed by foreach.output.as: %v", out)
			require.Equal(t, msgs, out["seen"], "do ran once for each message, in order")
			require.Equal(t, float64(2), out["at"])
		})

		t.Run("an unknown operation faults", func(t *testing.T) {
			w := run(t, e.call("unknown-op", "asyncapi-v3.yaml", uniqueSuffix(), `
        operation: nope
        message: {payload: {}}`), `{}`)
			require.Equal(t, persistence.StatusFailed, w.Status)
			p := problemFields(t, w)
			require.Equal(t, "https://serverlessworkflow.io/spec/1.0.0/errors/validation", p["type"])
			require.Contains(t, p["detail"], `no operation "nope"`)
		})

		t.Run("a broker that does not answer faults", func(t *testing.T) {
			w := run(t, e.call("down", "asyncapi-v3.yaml", uniqueSuffix(), `
        operation: sendGreeting
        server: {name: down}
        message: {payload: {}}`), `{}`)
			require.Equal(t, persistence.StatusFailed, w.Status)
			p := problemFields(t, w)
			require.Equal(t, "https://serverlessworkflow.io/spec/1.0.0/errors/communication", p["type"])
			require.Equal(t, float64(503), p["status"])
		})
	})
}

// TestAsyncAPISubscriptionBounds: a subscription ends at its `for`; one whose consume rules have
// not ended it by the node's limit faults, unless it has a foreach (then its loop processes what
// came); a document that does not parse faults; a private broker host is refused by default.
func TestAsyncAPISubscriptionBounds(t *testing.T) {
	t.Parallel()
	e := newAsyncEnv(t)
	store := dbtest.Open(t, persistence.KindSQLite)
	n := newNodeWith(t, store, serverless.Options{HTTP: serverless.HTTPOptions{Allow: []string{"127.0.0.1"}},
		AsyncAPI: serverless.AsyncAPIOptions{MaxSubscribeTime: time.Second}})
	n.startWorker(t)
	run := func(t *testing.T, doc string) *persistence.Workflow {
		def := n.deploy(t, doc)
		return n.waitEnded(t, n.start(t, def.Type, `{}`).ID)
	}
	nc := e.natsConn(t)

	t.Run("for ends a subscription with what came", func(t *testing.T) {
		started := time.Now()
		w := run(t, e.call("for", "asyncapi-v3.yaml", uniqueSuffix(), `
        operation: receiveGreetings
        subscription:
          consume: {amount: 5, for: {milliseconds: 200}}`))
		require.Equal(t, persistence.StatusFinished, w.Status, lastError(w))
		require.Equal(t, []any{}, output(t, w))
		require.Less(t, time.Since(started), 10*time.Second)
	})
	t.Run("the node's limit faults a subscription without foreach", func(t *testing.T) {
		w := run(t, e.call("forever", "asyncapi-v3.yaml", uniqueSuffix(), `
        operation: receiveGreetings
        subscription:
          consume: {while: '${ true }'}`))
		require.Equal(t, persistence.StatusFailed, w.Status)
		p := problemFields(t, w)
		require.Equal(t, "https://serverlessworkflow.io/spec/1.0.0/errors/timeout", p["type"])
		require.Equal(t, "Subscription Limit", p["title"])
	})
	t.Run("the node's limit ends a subscription with foreach", func(t *testing.T) {
		sfx := uniqueSuffix()
		stop := make(chan struct{})
		defer close(stop)
		var sent atomic.Int64
		publishUntil(t, nc, "cairn.test."+sfx+".greetings", stop, func(n int) string { sent.Store(int64(n)); return fmt.Sprintf(`{"n":%d}`, n) })
		w := run(t, e.call("forever-foreach", "asyncapi-v3.yaml", sfx, `
        operation: receiveGreetings
        subscription:
          consume: {while: '${ true }'}
          foreach:
            item: message
            do:
              - keep: {set: '${ {last: $message.payload.n} }'}`))
		require.Equal(t, persistence.StatusFinished, w.Status, lastError(w))
		require.NotEmpty(t, payloads(t, output(t, w)), "the messages that came within the limit")
	})
	t.Run("the task's timeout cuts a subscription off and leaves its AMQP messages queued", func(t *testing.T) {
		ch := e.amqpChannel(t)
		sfx := uniqueSuffix()
		q := "cairn-test-" + sfx + "-orders"
		e.queue(t, ch, q)
		for i := 1; i <= 2; i++ {
			require.NoError(t, ch.PublishWithContext(context.Background(), "", q, false, false, amqp.Publishing{Body: []byte(fmt.Sprintf(`{"n":%d}`, i))}))
		}
		doc := e.call("cut-off", "asyncapi-v3.yaml", sfx, `
        operation: receiveOrders
        subscription:
          consume: {amount: 5}`)
		w := run(t, strings.Replace(doc, "      call: asyncapi\n", "      call: asyncapi\n      timeout: {after: {milliseconds: 300}}\n", 1))
		require.Equal(t, persistence.StatusFailed, w.Status)
		p := problemFields(t, w)
		require.Equal(t, "https://serverlessworkflow.io/spec/1.0.0/errors/timeout", p["type"], "%v", p)
		require.Eventually(t, func() bool {
			st, err := ch.QueueDeclarePassive(q, true, false, false, false, nil)
			return err == nil && st.Messages == 2
		}, 5*time.Second, 20*time.Millisecond, "the two messages it had taken are back in the queue")
	})
	t.Run("a document that does not parse faults", func(t *testing.T) {
		w := run(t, e.call("garbage", "asyncapi-garbage.txt", uniqueSuffix(), `
        operation: sendGreeting
        message: {payload: {}}`))
		require.Equal(t, persistence.StatusFailed, w.Status)
		require.Equal(t, "https://serverlessworkflow.io/spec/1.0.0/errors/validation", problemFields(t, w)["type"])
	})
	t.Run("a broker the node's address rules refuse", func(t *testing.T) {
		fails := func(t *testing.T, opts serverless.Options, docURL string) map[string]any {
			local := newNodeWith(t, dbtest.Open(t, persistence.KindSQLite), opts)
			local.startWorker(t)
			doc := e.call("refused", "asyncapi-v3.yaml", uniqueSuffix(), `
        operation: sendGreeting
        message: {payload: {}}`)
			def := local.deploy(t, strings.Replace(doc, e.docs.URL, docURL, 1))
			w := local.waitEnded(t, local.start(t, def.Type, `{}`).ID)
			require.Equal(t, persistence.StatusFailed, w.Status)
			p := problemFields(t, w)
			require.Equal(t, float64(403), p["status"], "%v", p)
			return p
		}
		// Only the document's host is allowed.
		p := fails(t, serverless.Options{HTTP: serverless.HTTPOptions{Allow: []string{"localhost"}}}, strings.Replace(e.docs.URL, "127.0.0.1", "localhost", 1))
		require.Equal(t, "Host Not Allowed", p["title"])
		// Every host is allowed but none by name: the broker's loopback address is refused (the
		// document comes through a transport of the test's, without the address rules).
		p = fails(t, serverless.Options{HTTP: serverless.HTTPOptions{Transport: http.DefaultTransport}}, e.docs.URL)
		require.Equal(t, "Address Not Allowed", p["title"])
	})
}

// TestAsyncAPIDeployFaults: what cannot run is refused at deploy, at its pointer.
func TestAsyncAPIDeployFaults(t *testing.T) {
	t.Parallel()
	n := newNode(t, dbtest.Open(t, persistence.KindSQLite))
	head := "document: {dsl: '1.0.0', namespace: asyncapi, name: bad, version: '1.0.0'}\ndo:\n  - c:\n      call: asyncapi\n      with:\n        document: {endpoint: 'https://example.com/a.yaml'}\n"
	for _, tc := range []struct{ name, with, ptr string }{
		{"neither message nor subscription", "        operation: o\n", "/do/0/c/with"},
		{"both message and subscription", "        operation: o\n        message: {payload: {}}\n        subscription: {consume: {amount: 1}}\n", "/do/0/c/with"},
		{"no operation nor channel", "        message: {payload: {}}\n", "/do/0/c/with/operation"},
		{"consume without an end", "        operation: o\n        subscription: {consume: {for: PT1S}}\n", "/do/0/c/with/subscription/consume"},
		{"amount not a whole number", "        operation: o\n        subscription: {consume: {amount: 1.5}}\n", "/do/0/c/with/subscription/consume/amount"},
		{"foreach export", "        operation: o\n        subscription: {consume: {amount: 1}, foreach: {export: {as: '${ . }'}}}\n", "/do/0/c/with/subscription/foreach/export"},
		{"unknown protocol", "        operation: o\n        protocol: carrier-pigeon\n        message: {payload: {}}\n", "/do/0/c/with/protocol"},
		{"misspelt key", "        operation: o\n        mesage: {payload: {}}\n        message: {payload: {}}\n", "/do/0/c/with/mesage"},
		{"bad filter", "        operation: o\n        subscription: {filter: '${ .[ }', consume: {amount: 1}}\n", "/do/0/c/with/subscription/filter"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := n.engine.Deploy(context.Background(), head+tc.with, "")
			require.Error(t, err)
			require.Contains(t, err.Error(), tc.ptr+":", "%v", err)
		})
	}
}
