package main

import (
	"fmt"
	"runtime/debug"
)

// versionCmd is "incidentbot version".
type versionCmd struct{}

func (versionCmd) Run(e env) error {
	bi, ok := debug.ReadBuildInfo()
	v := "(devel)"
	if ok && bi.Main.Version != "" {
		v = bi.Main.Version
	}
	fmt.Fprintf(e.stdout, "incidentbot %s\n", v)
	return nil
}
