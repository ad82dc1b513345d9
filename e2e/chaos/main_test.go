// Package chaos runs the real boxoffice binary through the failures that the
// rules of DESIGN.md must survive, such as several instances serving one
// sale, and checks the rules after a whole sale driven over HTTP as fans
// drive it. It has only tests: TestMain builds the binary once (../../web,
// whose templ views `make generate` writes first), and the helpers start
// instances of it (startInstance), set up a sale (newSale), drive fans
// through it (newCrowd) and read what the instances count (scrape).
//
// Every test is named TestChaos_<Something>. `make test` runs the short
// version of each; `make chaos` sets BOXOFFICE_CHAOS=long
// (storetest.ChaosLong) for the long ones, with more fans and seats.
package chaos

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// binary is the boxoffice binary that TestMain built.
var binary string

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	dir, err := os.MkdirTemp("", "boxoffice-chaos")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	binary = filepath.Join(dir, "boxoffice")
	if out, err := exec.Command("go", "build", "-o", binary, "../../web").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build boxoffice (run `make generate` first): %v\n%s", err, out)
		return 1
	}
	return m.Run()
}
