package serverless

import (
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"time"
)

// kindProcess is a `run: shell`, `run: script` or `run: container` task: a child process of the
// node (for a container, the container runtime's CLI).
const kindProcess = "process"

// RunOptions say which processes `run: shell`, `run: script` and `run: container` tasks may start
// on this node and bound each one. A document that needs a runner the node does not allow is
// refused at deploy.
type RunOptions struct {
	// Allow names the runners this node allows: "shell", "script", "container". None by default.
	Allow []string
	// ContainerCLI is the container runtime's CLI that runs `run: container` (a name on PATH or a
	// path); empty: podman if on PATH, else docker.
	ContainerCLI string
	// Timeout bounds one process (DefaultRunTimeout when zero); a task's timeout bounds it too.
	Timeout time.Duration
	// MaxOutputBytes bounds what a process writes to stdout and stderr together
	// (DefaultRunMaxOutputBytes when zero); past it the process is killed and the task faults.
	MaxOutputBytes int64
}

// The defaults of RunOptions.
const (
	DefaultRunTimeout        = time.Minute
	DefaultRunMaxOutputBytes = 1 << 20
)

// Runners are the runners RunOptions.Allow may name.
var Runners = []string{"shell", "script", "container"}

// processStepMargin is how much longer than its process a process task's step may run: time to
// store its outcome before the engine's step timeout would cut it short.
const processStepMargin = 30 * time.Second

func (o RunOptions) withDefaults() RunOptions {
	if o.Timeout <= 0 {
		o.Timeout = DefaultRunTimeout
	}
	if o.MaxOutputBytes <= 0 {
		o.MaxOutputBytes = DefaultRunMaxOutputBytes
	}
	return o
}

// interpreters run the languages of `run: script`: the program each is given to on the node.
var interpreters = map[string]struct{ program, ext string }{
	"js":         {"node", ".js"},
	"javascript": {"node", ".js"},
	"python":     {"python3", ".py"},
}

// The outputs a process task may return (`return`).
var processReturns = []string{"stdout", "stderr", "code", "all", "none"}

// processSpec is a compiled `run: shell`, `run: script` or `run: container`.
type processSpec struct {
	runner  string    // shell, script or container
	command *template // shell: the command, given to sh -c
	program string    // script: the interpreter
	ext     string    // script: the extension of the file the code is written to
	code    string    // script: its code
	args    *template // a list (argv) or a map (key=value each); nil: none
	env     map[string]*template
	stdin   *template
	ret     string
	// container: the image and how to run it (container.go)
	container *containerSpec
}

// isRunProcess reports whether a task's run is a shell command, a script or a container.
func isRunProcess(v any) bool {
	m, ok := v.(map[string]any)
	if !ok || m["workflow"] != nil {
		return false
	}
	n := 0
	for _, k := range []string{"shell", "script", "container"} {
		if m[k] != nil {
			n++
		}
	}
	return n == 1
}

func (c *compiler) compileRunProcess(t *task, run map[string]any, sc scope) error {
	ptr := t.path + "/run"
	ps := &processSpec{runner: "shell", ret: "stdout"}
	if run["script"] != nil {
		ps.runner = "script"
	} else if run["container"] != nil {
		ps.runner = "container"
	}
	body, ok := run[ps.runner].(map[string]any)
	if !ok {
		return faultAt(ptr+"/"+ps.runner, "run: %s must be an object", ps.runner)
	}
	if !slices.Contains(c.run.Allow, ps.runner) {
		return faultAt(ptr+"/"+ps.runner, "task %s: this node does not allow run: %s (start it with --allow-run %s)", t.name, ps.runner, ps.runner)
	}
	if a, ok := run["await"].(bool); ok && !a {
		return faultAt(ptr+"/await", "task %s: run: %s with await: false is not supported: a process not awaited would outlive the step that started it, with nothing durable to stop or recover it", t.name, ps.runner)
	}
	if v, ok := run["return"]; ok {
		s, _ := v.(string)
		if !slices.Contains(processReturns, s) {
			return faultAt(ptr+"/return", "return must be one of %s", strings.Join(processReturns, ", "))
		}
		ps.ret = s
	}
	bptr := ptr + "/" + ps.runner
	var err error
	if ps.runner == "shell" {
		cmd, _ := body["command"].(string)
		if strings.TrimSpace(cmd) == "" {
			return faultAt(bptr+"/command", "run: shell needs its command, a string")
		}
		if ps.command, err = compileTemplate(cmd, sc, bptr+"/command"); err != nil {
			return err
		}
	} else if ps.runner == "container" {
		if err := c.compileContainer(ps, body, bptr, sc); err != nil {
			return err
		}
	} else if err := compileScript(ps, body, bptr); err != nil {
		return err
	}
	if v, ok := body["arguments"]; ok {
		if err := checkArguments(v, bptr+"/arguments"); err != nil {
			return err
		}
		if ps.args, err = compileTemplate(v, sc, bptr+"/arguments"); err != nil {
			return err
		}
	}
	if v, ok := body["environment"]; ok {
		env, ok := v.(map[string]any)
		if !ok {
			return faultAt(bptr+"/environment", "environment must be a map of names to strings")
		}
		ps.env = map[string]*template{}
		for k, val := range env {
			eptr := bptr + "/environment/" + escapePointer(k)
			if k == "" || strings.ContainsAny(k, "=\x00") {
				return faultAt(eptr, "an environment variable's name must be non-empty, without = or NUL")
			}
			if _, ok := val.(string); !ok {
				return faultAt(eptr, "an environment variable's value must be a string (or an expression)")
			}
			if ps.env[k], err = compileTemplate(val, sc, eptr); err != nil {
				return err
			}
		}
	}
	if v, ok := body["stdin"]; ok {
		if _, ok := v.(string); !ok {
			return faultAt(bptr+"/stdin", "stdin must be a string or a runtime expression")
		}
		if ps.stdin, err = compileTemplate(v, sc, bptr+"/stdin"); err != nil {
			return err
		}
	}
	t.kind, t.process = kindProcess, ps
	return nil
}

// compileScript reads a script's language and inline code; the interpreter must be on the node.
func compileScript(ps *processSpec, body map[string]any, ptr string) error {
	lang, _ := body["language"].(string)
	in, ok := interpreters[lang]
	if !ok {
		return faultAt(ptr+"/language", "a script's language must be js, javascript or python, not %q", lang)
	}
	if _, err := exec.LookPath(in.program); err != nil {
		return faultAt(ptr+"/language", "this node has no %s to run %s scripts (%v)", in.program, lang, err)
	}
	ps.program, ps.ext = in.program, in.ext
	if body["source"] != nil {
		return faultAt(ptr+"/source", "a script's source is not fetched by cairn: give its code inline in code")
	}
	code, _ := body["code"].(string)
	if strings.TrimSpace(code) == "" {
		return faultAt(ptr+"/code", "run: script needs its code, a string")
	}
	ps.code = code
	return nil
}

// checkArguments accepts a list of strings (argv) or a map of names to strings (each passed as
// name=value, a name without value alone), expressions allowed.
func checkArguments(v any, ptr string) error {
	switch a := v.(type) {
	case []any:
		for i, x := range a {
			if _, ok := x.(string); !ok {
				return faultAt(fmt.Sprintf("%s/%d", ptr, i), "an argument must be a string (or an expression)")
			}
		}
	case map[string]any:
		for k, x := range a {
			if _, ok := x.(string); !ok && x != nil {
				return faultAt(ptr+"/"+escapePointer(k), "an argument's value must be a string, an expression or null")
			}
		}
	default:
		return faultAt(ptr, "arguments must be a list of strings or a map of names to values")
	}
	return nil
}
