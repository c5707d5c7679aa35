package serverless

import (
	"fmt"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"time"
)

// A `run: container` task runs an image through the node's container runtime CLI (podman or
// docker): `<cli> run` with the task's command, arguments, environment and stdin, bounded like a
// process (container_exec.go). The node allows it with --allow-run container.

// containerSpec is a compiled `run: container`.
type containerSpec struct {
	cli      string    // the runtime's CLI, found on PATH at deploy
	image    *template // the image's reference
	name     *template // the container's name; nil: cairn names it
	command  string    // run by /bin/sh -c in the container; empty: the image's own
	ports    []string  // -p host:container, in the order of the host ports
	volumes  []string  // -v host:container, in the order of the host paths
	pull     string    // --pull: missing, always or never
	cleanup  string    // always, never or eventually
	after    time.Duration
	hasStdin bool
}

// pullPolicies map the spec's pullPolicy to the CLI's --pull.
var pullPolicies = map[string]string{"ifNotPresent": "missing", "always": "always", "never": "never"}

var (
	// A published port: [ip:]port on the host, port[/tcp|udp|sctp] in the container.
	hostPortPattern      = regexp.MustCompile(`^(?:[0-9.]+:)?[0-9]{1,5}$`)
	containerPortPattern = regexp.MustCompile(`^[0-9]{1,5}(?:/(?:tcp|udp|sctp))?$`)
	// containerNamePattern is what docker and podman accept as a container's name.
	containerNamePattern = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_.-]{0,127}$`)
)

// containerCLI is the CLI that runs containers on this node: the one RunOptions names, else
// podman if on PATH, else docker. Empty: none is found.
func containerCLI(o RunOptions) (string, error) {
	if o.ContainerCLI != "" {
		p, err := exec.LookPath(o.ContainerCLI)
		if err != nil {
			return "", fmt.Errorf("this node has no container runtime CLI %q (%v)", o.ContainerCLI, err)
		}
		return p, nil
	}
	for _, name := range []string{"podman", "docker"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("this node has no container runtime: neither podman nor docker is on its PATH")
}

// compileContainer reads the body of a `run: container` at ptr into ps.
func (c *compiler) compileContainer(ps *processSpec, body map[string]any, ptr string, sc scope) error {
	cli, err := containerCLI(c.run)
	if err != nil {
		return faultAt(ptr, "%v", err)
	}
	cs := &containerSpec{cli: cli, pull: "missing", cleanup: "never"}
	img, _ := body["image"].(string)
	if strings.TrimSpace(img) == "" {
		return faultAt(ptr+"/image", "run: container needs its image, a string")
	}
	if strings.HasPrefix(img, "-") {
		return faultAt(ptr+"/image", "an image's name does not begin with -")
	}
	if cs.image, err = compileTemplate(img, sc, ptr+"/image"); err != nil {
		return err
	}
	if v, ok := body["name"]; ok {
		s, isStr := v.(string)
		if !isStr || s == "" {
			return faultAt(ptr+"/name", "a container's name is a string or a runtime expression")
		}
		if !isStrict(s) && !containerNamePattern.MatchString(s) {
			return faultAt(ptr+"/name", "a container's name has letters, digits, _ . and - (at most 128, not beginning with _ . -)")
		}
		if cs.name, err = compileTemplate(s, sc, ptr+"/name"); err != nil {
			return err
		}
	}
	if v, ok := body["command"]; ok {
		s, _ := v.(string)
		if strings.TrimSpace(s) == "" {
			return faultAt(ptr+"/command", "a container's command is a non-empty string, run by /bin/sh -c in the container")
		}
		cs.command = s
	}
	if cs.ports, err = containerMappings(body["ports"], ptr+"/ports", "port", checkPort); err != nil {
		return err
	}
	if cs.volumes, err = containerMappings(body["volumes"], ptr+"/volumes", "volume", checkVolume); err != nil {
		return err
	}
	if v, ok := body["pullPolicy"]; ok {
		s, _ := v.(string)
		if cs.pull = pullPolicies[s]; cs.pull == "" {
			return faultAt(ptr+"/pullPolicy", "pullPolicy must be ifNotPresent, always or never")
		}
	}
	if v, ok := body["lifetime"]; ok {
		if err := compileLifetime(cs, v, ptr+"/lifetime"); err != nil {
			return err
		}
	}
	if env, ok := body["environment"].(map[string]any); ok {
		for k := range env {
			if strings.ContainsAny(k, " \t\r\n") || strings.HasPrefix(k, "#") {
				return faultAt(ptr+"/environment/"+escapePointer(k), "a container's environment variable's name has no blanks and does not begin with #")
			}
		}
	}
	cs.hasStdin = body["stdin"] != nil
	ps.container = cs
	return nil
}

// compileLifetime reads lifetime: cleanup always, never (the default) or eventually, after a duration.
func compileLifetime(cs *containerSpec, v any, ptr string) error {
	m, ok := v.(map[string]any)
	if !ok {
		return faultAt(ptr, "lifetime is an object with cleanup and after")
	}
	s, _ := m["cleanup"].(string)
	if !slices.Contains([]string{"always", "never", "eventually"}, s) {
		return faultAt(ptr+"/cleanup", "cleanup must be always, never or eventually")
	}
	cs.cleanup = s
	if s != "eventually" {
		return nil
	}
	if m["after"] == nil {
		return faultAt(ptr+"/after", "cleanup: eventually needs after, the duration the container is kept once it ended")
	}
	d, err := parseDuration(m["after"], ptr+"/after")
	if err != nil {
		return err
	}
	if d <= 0 || d > maxContainerKeep {
		return faultAt(ptr+"/after", "after must be longer than zero and at most %s", maxContainerKeep)
	}
	cs.after = d
	return nil
}

// maxContainerKeep bounds lifetime.after.
const maxContainerKeep = 30 * 24 * time.Hour

// containerMappings reads ports or volumes, a map of the host's side to the container's, as
// host:container options in the order of the host's side.
func containerMappings(v any, ptr, what string, check func(host, inside string) bool) ([]string, error) {
	if v == nil {
		return nil, nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, faultAt(ptr, "%ss are a map of the host's side to the container's", what)
	}
	out := make([]string, 0, len(m))
	for _, host := range sortedKeys(m) {
		var inside string
		switch x := m[host].(type) {
		case string:
			inside = x
		case float64:
			inside = fmt.Sprint(x)
		}
		if !check(host, inside) {
			return nil, faultAt(ptr+"/"+escapePointer(host), "not a %s mapping cairn passes on: %s", what, mappingHelp[what])
		}
		out = append(out, host+":"+inside)
	}
	return out, nil
}

var mappingHelp = map[string]string{
	"port":   "the host's [ip:]port to the container's port[/tcp|udp|sctp]",
	"volume": "an absolute path on the host to an absolute path in the container, without : or ,",
}

func checkPort(host, inside string) bool {
	return hostPortPattern.MatchString(host) && containerPortPattern.MatchString(inside)
}

func checkVolume(host, inside string) bool {
	ok := func(p string) bool {
		return strings.HasPrefix(p, "/") && !strings.ContainsAny(p, ":,\x00\n")
	}
	return ok(host) && ok(inside)
}
