package serverless_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/internal/serverless"
	"github.com/cairnflow/cairn/workflow"
)

const flowDoc = `document:
  dsl: '1.0.0'
  namespace: test
  name: limited
  version: '1.0.0'
  metadata:
    flowControl:
      concurrency: {limit: 2, key: .customer, strategy: CANCEL_NEWEST}
      rateLimit: {limit: 10, period: PT1S}
do:
  - hello:
      set: {greeting: hi}
`

// document.metadata.flowControl becomes the definition's FlowControl; a bad one names where.
func TestDocumentFlowControl(t *testing.T) {
	c := serverless.NewCompiler(serverless.Options{})
	doc, err := c.Compile([]byte(flowDoc))
	require.NoError(t, err)
	fc := doc.Definition.FlowControl
	require.NotNil(t, fc)
	require.Equal(t, workflow.Concurrency{Limit: 2, Key: ".customer", Strategy: workflow.StrategyCancelNewest}, *fc.Concurrency)
	require.Equal(t, workflow.RateLimit{Limit: 10, Period: time.Second}, *fc.RateLimit)

	for bad, where := range map[string]string{
		"limit: 2,":        "limit: 0,",
		"period: PT1S":     "period: soon",
		"key: .customer,":  "key: '.customer | [',",
		"strategy: CANCEL": "strategy: XCANCEL",
	} {
		_, err := c.Compile([]byte(strings.Replace(flowDoc, bad, where, 1)))
		require.Error(t, err, where)
		require.Contains(t, err.Error(), "/document/metadata/flowControl", where)
	}
}
