package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
)

// errHelpShown ends a command that printed its help because of -h; the exit status is 0.
var errHelpShown = errors.New("help shown")

// envNames holds the environment twins that do not follow the CAIRN_<FLAG_NAME> rule.
var envNames = map[string]string{
	"database": "CAIRN_DATABASE_URL",
}

// envName returns the environment variable that stands in for a flag: CAIRN_ and the flag's
// name in upper snake case, unless envNames says otherwise.
func envName(flagName string) string {
	if n, ok := envNames[flagName]; ok {
		return n
	}
	return "CAIRN_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// flagSet is a command's flags, with the usage line its help starts with.
type flagSet struct {
	*flag.FlagSet
	usage string
}

// newFlagSet returns the flags of a command. The flag package's own error output is silenced:
// cairn reports a bad flag as its one-line error.
func newFlagSet(name, usage string) *flagSet {
	fs := flag.NewFlagSet("cairn "+name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return &flagSet{FlagSet: fs, usage: usage}
}

// parse reads the command line, then fills every flag not given there from its environment twin,
// and returns the positional arguments (flags and positional arguments may be mixed). With -h it
// prints the help to w and returns errHelpShown.
func (fs *flagSet) parse(args []string, getenv func(string) string, w io.Writer) ([]string, error) {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				fs.printHelp(w)
				return nil, errHelpShown
			}
			return nil, usageError{fmt.Errorf("%w (see %s -h)", err, fs.Name())}
		}
		args = fs.Args()
		if len(args) == 0 {
			break
		}
		positional = append(positional, args[0])
		args = args[1:]
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		if err != nil || given[f.Name] {
			return
		}
		name := envName(f.Name)
		v := getenv(name)
		if v == "" {
			return
		}
		if setErr := f.Value.Set(v); setErr != nil {
			err = usageError{fmt.Errorf("invalid value %q in %s: %w", v, name, setErr)}
		}
	})
	return positional, err
}

// printHelp lists the flags with their defaults and environment twins.
func (fs *flagSet) printHelp(w io.Writer) {
	fmt.Fprintf(w, "Usage: %s\n\nFlags (each also read from the environment variable shown):\n", fs.usage)
	fs.VisitAll(func(f *flag.Flag) {
		name, usage := flag.UnquoteUsage(f)
		if name != "" {
			name = " " + name
		}
		def := ""
		if f.DefValue != "" && f.DefValue != "false" {
			def = fmt.Sprintf(" (default %s)", f.DefValue)
		}
		fmt.Fprintf(w, "  --%s%s  [%s]\n      %s%s\n", f.Name, name, envName(f.Name), usage, def)
	})
}
