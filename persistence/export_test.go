package persistence

// KeyHeadsForTest is keyHeads, for the plan tests of the external test package.
var KeyHeadsForTest = keyHeads
