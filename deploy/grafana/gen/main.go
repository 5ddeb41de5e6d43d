// Command gen writes the Grafana dashboard (package grafana) to
// deploy/grafana/shardlease-dashboard.json; run it from the repository's
// root after changing the dashboard (deploy's tests fail until the file is
// what the code builds):
//
//	go run ./deploy/grafana/gen
package main

import (
	"fmt"
	"os"

	"github.com/shardlease/shardlease/deploy/grafana"
)

func main() {
	b, err := grafana.JSON()
	if err == nil {
		err = os.WriteFile(grafana.File, b, 0o644)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
	fmt.Println(grafana.File)
}
