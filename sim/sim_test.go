package sim

import (
	"testing"
)

func TestSmoke(t *testing.T) {
	res, err := Run(Options{Seed: 1, KeepTrace: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Log(res.Summary())
}
