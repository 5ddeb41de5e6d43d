package main

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// TestDeployEtcdManifest keeps deploy/etcd/consumer.yaml in step with `live
// run`: every LIVE_* variable it sets is a flag of live run (or the
// password's file), every file a variable names is in the mounted Secret,
// and the pods' grace period outlasts the graceful shutdown.
func TestDeployEtcdManifest(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "deploy", "etcd", "consumer.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var secret, deploy map[string]any
	for _, doc := range strings.Split(string(b), "\n---\n") {
		var m map[string]any
		if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
			t.Fatalf("deploy/etcd/consumer.yaml: %v", err)
		}
		switch m["kind"] {
		case "Secret":
			secret = m
		case "Deployment":
			deploy = m
		}
	}
	if secret == nil || deploy == nil {
		t.Fatal("deploy/etcd/consumer.yaml lacks its Secret or its Deployment")
	}
	fs := flag.NewFlagSet("live run", flag.ContinueOnError)
	var f workerFlags
	f.register(fs)
	get := func(m any, path ...string) any {
		for _, p := range path {
			mm, _ := m.(map[string]any)
			m = mm[p]
		}
		return m
	}
	pod := get(deploy, "spec", "template", "spec")
	c := get(pod, "containers").([]any)[0]
	mount := get(c, "volumeMounts").([]any)[0].(map[string]any)["mountPath"].(string)
	keys := get(secret, "stringData").(map[string]any)
	env := map[string]string{}
	for _, e := range get(c, "env").([]any) {
		m := e.(map[string]any)
		name, _ := m["name"].(string)
		value, _ := m["value"].(string)
		env[name] = value
		flagName, ok := strings.CutPrefix(name, "LIVE_")
		if !ok {
			continue
		}
		flagName = strings.ToLower(strings.ReplaceAll(flagName, "_", "-"))
		if fs.Lookup(flagName) == nil {
			t.Errorf("the manifest sets %s, but live run has no flag -%s", name, flagName)
		}
	}
	for _, name := range []string{"LIVE_ETCD_CA", "LIVE_ETCD_PASSWORD_FILE"} {
		p := env[name]
		key, ok := strings.CutPrefix(p, mount+"/")
		if !ok || keys[key] == nil {
			t.Errorf("%s=%s is not a key of the Secret mounted at %s", name, p, mount)
		}
	}
	if env["LIVE_STORE"] != storeEtcd || env["LIVE_ETCD_ENDPOINTS"] == "" || env["LIVE_ETCD_PASSWORD"] != "" {
		t.Errorf("the manifest's store settings: %v (want LIVE_STORE=etcd, endpoints, and no password in the environment)", env)
	}
	grace, _ := get(pod, "terminationGracePeriodSeconds").(float64)
	if grace <= 10 {
		t.Errorf("terminationGracePeriodSeconds %v: the graceful shutdown takes up to the lease duration (10 s)", grace)
	}
}
