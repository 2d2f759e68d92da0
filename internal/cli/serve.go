package cli

// Stub until the SSH issue lands.
var runServe = notBuilt("serve")
