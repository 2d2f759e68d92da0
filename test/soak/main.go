package main

import (
	"fmt"
	"os"
)

func main() {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case "check":
			os.Exit(runCheck(os.Args[2:]))
		case "rss":
			os.Exit(runRSS(os.Args[2:]))
		case "help", "-h", "--help":
			fmt.Fprintln(os.Stderr, "usage: soak [flags] | soak check [flags] | soak rss [flags]  (soak COMMAND --help for flags)")
			os.Exit(0)
		}
	}
	os.Exit(runSoak(os.Args[1:]))
}
