package workflow_test

import (
	"context"
	"fmt"
	"log"
	"log/slog"
	"os"

	"github.com/cairnflow/cairn"
	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/workflow"
)

// Embedding cairn in a Go program: open a store, build a node, register a definition with its step
// handlers, run the node (its worker pool and services), start a workflow and wait for it to end.
func Example() {
	ctx, stop := context.WithCancel(context.Background())
	defer stop()

	dir, err := os.MkdirTemp("", "cairn-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	store, err := persistence.Open(ctx, "sqlite://"+dir+"/cairn.db", persistence.OpenOptions{})
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	if _, err := store.Migrate(ctx); err != nil {
		log.Fatal(err)
	}

	quiet := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	node, err := cairn.New(store, cairn.Options{Logger: quiet, Concurrency: 10})
	if err != nil {
		log.Fatal(err)
	}
	_, err = node.Register(ctx, workflow.Definition{
		Type: "greeting",
		States: []workflow.State{
			{Name: "greet", Kind: workflow.Start, Next: []string{"done"}, Handler: func(c workflow.StepContext) (workflow.Next, error) {
				var in struct{ Name string }
				if err := c.Input(&in); err != nil {
					return workflow.Next{}, err
				}
				if err := c.SetVar("greeting", "hello, "+in.Name); err != nil {
					return workflow.Next{}, err
				}
				return workflow.MoveTo("done"), nil
			}},
			{Name: "done", Kind: workflow.End},
		},
	})
	if err != nil {
		log.Fatal(err)
	}

	stopped := make(chan error, 1)
	go func() { stopped <- node.Run(ctx) }() // until ctx ends, then drains
	defer func() { stop(); <-stopped }()

	started, err := node.Start(ctx, workflow.StartParams{Type: "greeting", Input: []byte(`{"name": "cairn"}`)})
	if err != nil {
		log.Fatal(err)
	}
	w, err := node.Wait(ctx, started.Workflow.ID) // until it ends, without polling
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(w.Status, w.State, string(w.Variables))
	// Output: FINISHED done {"greeting":"hello, cairn"}
}
