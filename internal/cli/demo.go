package cli

// Stub until the demo issue lands.
var runDemo = notBuilt("demo")
