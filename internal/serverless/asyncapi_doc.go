package serverless

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"
)

// The parts of an AsyncAPI document (3.0, or 2.6) that `call: asyncapi` needs: its servers (host
// and protocol), its channels (address and AMQP bindings) and, in 3.0, its operations (the
// channel each one acts on). There is no Go parser for AsyncAPI kept up to date; this small typed
// decode reads what is used and ignores the rest (schemas of messages are not checked).

type asyncDoc struct {
	AsyncAPI   string                    `json:"asyncapi"`
	Servers    map[string]asyncServer    `json:"servers"`
	Channels   map[string]asyncChannel   `json:"channels"`
	Operations map[string]asyncOperation `json:"operations"`
}

type asyncServer struct {
	Host      string                              `json:"host"`     // 3.0: host[:port]
	Pathname  string                              `json:"pathname"` // 3.0: an AMQP virtual host
	URL       string                              `json:"url"`      // 2.6: [scheme://]host[:port][/vhost]
	Protocol  string                              `json:"protocol"`
	Variables map[string]struct{ Default string } `json:"variables"`
}

type asyncChannel struct {
	Address  *string    `json:"address"` // 3.0 (null or absent: the channel's key)
	Servers  []asyncRef `json:"servers"` // 3.0: the servers it is on (none: every server)
	Bindings struct {
		AMQP *amqpChannelBinding `json:"amqp"`
	} `json:"bindings"`
	Publish   json.RawMessage `json:"publish"`   // 2.6
	Subscribe json.RawMessage `json:"subscribe"` // 2.6
}

// amqpChannelBinding is the AMQP binding of a channel: its address is an exchange's routing key
// or a queue.
type amqpChannelBinding struct {
	Is       string `json:"is"` // routingKey (default) or queue
	Exchange struct {
		Name string `json:"name"`
	} `json:"exchange"`
	Queue struct {
		Name string `json:"name"`
	} `json:"queue"`
}

type asyncOperation struct {
	Action  string   `json:"action"` // send or receive
	Channel asyncRef `json:"channel"`
}

type asyncRef struct {
	Ref string `json:"$ref"`
}

// asyncTarget is where a call publishes or subscribes: a channel's address on a server.
type asyncTarget struct {
	protocol string // nats or amqp
	host     string // host:port
	vhost    string // AMQP virtual host
	address  string // NATS subject, AMQP routing key or queue
	amqp     *amqpChannelBinding
}

// parseAsyncAPI reads an AsyncAPI 3.x or 2.6 document (JSON or YAML).
func parseAsyncAPI(raw []byte) (*asyncDoc, error) {
	js, err := yaml.YAMLToJSON(raw)
	if err != nil {
		return nil, fmt.Errorf("neither JSON nor YAML: %w", err)
	}
	var doc asyncDoc
	if err := json.Unmarshal(js, &doc); err != nil {
		return nil, fmt.Errorf("not an AsyncAPI document: %w", err)
	}
	if !strings.HasPrefix(doc.AsyncAPI, "3.") && !strings.HasPrefix(doc.AsyncAPI, "2.") {
		return nil, errors.New("neither AsyncAPI 3 nor 2 (the asyncapi field)")
	}
	return &doc, nil
}

func (d *asyncDoc) v3() bool { return strings.HasPrefix(d.AsyncAPI, "3.") }

// refName is the name a local reference points to under prefix (#/channels/x: x).
func refName(ref, prefix string) (string, bool) {
	name, ok := strings.CutPrefix(ref, prefix)
	if !ok || name == "" || strings.Contains(name, "/") {
		return "", false
	}
	return strings.NewReplacer("~1", "/", "~0", "~").Replace(name), true
}

// target resolves where a call acts: the channel of its operation (3.0) or the channel it names
// (2.6), on the server it names or the first (by name) that speaks its protocol and carries the
// channel. vars are the values of the server's variables the call gives.
func (d *asyncDoc) target(c *asyncCall, vars map[string]any) (*asyncTarget, error) {
	var chName string
	if d.v3() {
		if c.operation == "" {
			return nil, errors.New("an AsyncAPI 3 document is called by operation, not channel")
		}
		op, ok := d.Operations[c.operation]
		if !ok {
			return nil, fmt.Errorf("no operation %q", c.operation)
		}
		if chName, ok = refName(op.Channel.Ref, "#/channels/"); !ok {
			return nil, fmt.Errorf("operation %q: its channel must be a reference to #/channels/<name>", c.operation)
		}
	} else {
		if c.channel == "" {
			return nil, errors.New("an AsyncAPI 2 document is called by channel, not operation")
		}
		chName = c.channel
	}
	ch, ok := d.Channels[chName]
	if !ok {
		return nil, fmt.Errorf("no channel %q", chName)
	}
	address := chName
	if d.v3() && ch.Address != nil {
		address = *ch.Address
	}
	if address == "" {
		return nil, fmt.Errorf("channel %q has no address", chName)
	}
	var onChannel []string
	for _, r := range ch.Servers {
		if n, ok := refName(r.Ref, "#/servers/"); ok {
			onChannel = append(onChannel, n)
		}
	}
	name, err := d.pickServer(c, onChannel)
	if err != nil {
		return nil, err
	}
	s := d.Servers[name]
	t := &asyncTarget{protocol: strings.ToLower(s.Protocol), address: address, amqp: ch.Bindings.AMQP}
	host, path := s.Host, s.Pathname
	if !d.v3() {
		raw := s.URL
		if !strings.Contains(raw, "://") {
			raw = "x://" + raw
		}
		u, err := url.Parse(substitute(raw, s, vars))
		if err != nil {
			return nil, fmt.Errorf("server %q: invalid url: %w", name, err)
		}
		host, path = u.Host, u.Path
	}
	t.host, t.vhost = substitute(host, s, vars), strings.TrimPrefix(substitute(path, s, vars), "/")
	if strings.ContainsAny(t.host, "{}") || t.host == "" {
		return nil, fmt.Errorf("server %q: host %q has a variable with no value", name, t.host)
	}
	if _, _, err := net.SplitHostPort(t.host); err != nil {
		port := map[string]string{"nats": "4222", "amqp": "5672"}[t.protocol]
		t.host = net.JoinHostPort(t.host, port)
	}
	if t.protocol != "nats" && t.protocol != "amqp" {
		return nil, fmt.Errorf("server %q speaks %q: cairn publishes and subscribes over nats and amqp (0-9-1) only", name, s.Protocol)
	}
	return t, nil
}

// pickServer is the call's server: named, or the first of the channel's servers (in its order;
// without any, every server by name) that speaks the call's protocol when it gives one.
func (d *asyncDoc) pickServer(c *asyncCall, onChannel []string) (string, error) {
	if c.server != "" {
		if _, ok := d.Servers[c.server]; !ok {
			return "", fmt.Errorf("no server %q", c.server)
		}
		return c.server, nil
	}
	names := onChannel // in the channel's order
	if len(names) == 0 {
		names = make([]string, 0, len(d.Servers))
		for n := range d.Servers {
			names = append(names, n)
		}
		sort.Strings(names)
	}
	for _, n := range names {
		if _, ok := d.Servers[n]; !ok {
			continue
		}
		if c.protocol == "" || strings.EqualFold(d.Servers[n].Protocol, c.protocol) {
			return n, nil
		}
	}
	if c.protocol != "" {
		return "", fmt.Errorf("no server of protocol %q carries the channel", c.protocol)
	}
	return "", errors.New("no server carries the channel")
}

// substitute replaces a server's {variables}: the call's values first, then their defaults.
func substitute(s string, srv asyncServer, vars map[string]any) string {
	for name, v := range vars {
		s = strings.ReplaceAll(s, "{"+name+"}", fmt.Sprint(v))
	}
	for name, v := range srv.Variables {
		s = strings.ReplaceAll(s, "{"+name+"}", v.Default)
	}
	return s
}
