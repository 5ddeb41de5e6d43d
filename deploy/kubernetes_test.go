package deploy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"sigs.k8s.io/yaml"

	"github.com/shardlease/shardlease/engine"
	"github.com/shardlease/shardlease/probe"
)

// exitSlack is what the example program takes after Run returns: its HTTP
// server's shutdown (1 s) and the exit; terminationGracePeriodSeconds is
// the engine's shutdown bound plus this.
const exitSlack = 5 * time.Second

// manifests are the objects of deploy/kubernetes, decoded strictly (an
// unknown field is an error) into the Kubernetes API types.
type manifests struct {
	deployment *appsv1.Deployment
	pdb        *policyv1.PodDisruptionBudget
	account    *corev1.ServiceAccount
}

func decodeManifests(t *testing.T) manifests {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("kubernetes", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests: %v", err)
	}
	var m manifests
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, doc := range bytes.Split(b, []byte("\n---")) {
			if len(bytes.TrimSpace(doc)) == 0 {
				continue
			}
			obj, err := decodeObject(doc)
			if err != nil {
				t.Fatalf("%s, document %d: %v", f, i+1, err)
			}
			switch o := obj.(type) {
			case *appsv1.Deployment:
				m.deployment = o
			case *policyv1.PodDisruptionBudget:
				m.pdb = o
			case *corev1.ServiceAccount:
				m.account = o
			}
		}
	}
	if m.deployment == nil || m.pdb == nil || m.account == nil {
		t.Fatalf("want a Deployment, a PodDisruptionBudget and a ServiceAccount; got %+v", m)
	}
	return m
}

// decodeObject decodes one YAML document strictly into the type its
// apiVersion and kind name.
func decodeObject(doc []byte) (any, error) {
	var tm struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
	}
	if err := yaml.Unmarshal(doc, &tm); err != nil {
		return nil, err
	}
	var obj any
	switch tm.APIVersion + " " + tm.Kind {
	case "apps/v1 Deployment":
		obj = &appsv1.Deployment{}
	case "policy/v1 PodDisruptionBudget":
		obj = &policyv1.PodDisruptionBudget{}
	case "v1 ServiceAccount":
		obj = &corev1.ServiceAccount{}
	default:
		return nil, fmt.Errorf("unexpected %s %s", tm.APIVersion, tm.Kind)
	}
	if err := yaml.UnmarshalStrict(doc, obj); err != nil {
		return nil, err
	}
	return obj, nil
}

func TestDecodeIsStrict(t *testing.T) {
	if _, err := decodeObject([]byte("apiVersion: apps/v1\nkind: Deployment\nspec:\n  replica: 3\n")); err == nil {
		t.Fatal("a Deployment with an unknown field (replica) decoded")
	}
	if _, err := decodeObject([]byte("apiVersion: v1\nkind: Service\n")); err == nil {
		t.Fatal("an unexpected kind decoded")
	}
}

// args reads -name=value arguments.
func args(c corev1.Container) map[string]string {
	out := map[string]string{}
	for _, a := range c.Args {
		name, v, _ := strings.Cut(strings.TrimPrefix(a, "-"), "=")
		out[name] = v
	}
	return out
}

// TestDeployment checks the Deployment against the code: the probes' paths
// are package probe's, on the port -metrics-addr serves (and the example
// program serves them), the grace period covers the engine's shutdown
// bound, no preStop, the scrape annotations, and the PDB and the service
// account match.
func TestDeployment(t *testing.T) {
	m := decodeManifests(t)
	d := m.deployment
	spec := d.Spec.Template.Spec
	if len(spec.Containers) != 1 {
		t.Fatalf("%d containers", len(spec.Containers))
	}
	c := spec.Containers[0]
	a := args(c)

	_, portStr, ok := strings.Cut(a["metrics-addr"], ":")
	port, err := strconv.Atoi(portStr)
	if !ok || err != nil {
		t.Fatalf("-metrics-addr=%q: want :PORT", a["metrics-addr"])
	}
	var named *corev1.ContainerPort
	for i := range c.Ports {
		if c.Ports[i].Name == "metrics" {
			named = &c.Ports[i]
		}
	}
	if named == nil || int(named.ContainerPort) != port {
		t.Fatalf("container port metrics %+v, want %d (-metrics-addr)", named, port)
	}
	if got := d.Spec.Template.Annotations["prometheus.io/port"]; got != portStr {
		t.Errorf("prometheus.io/port %q, want %s", got, portStr)
	}
	if got := d.Spec.Template.Annotations["prometheus.io/path"]; got != "/metrics" {
		t.Errorf("prometheus.io/path %q", got)
	}

	// the probes: package probe's paths, on the metrics port
	mux := http.NewServeMux()
	probe.Handle(mux, func() engine.Health {
		return engine.Health{Live: true, LiveReason: "ok: x", ReadyReason: "not ready: y"}
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	for name, p := range map[string]*corev1.Probe{"liveness": c.LivenessProbe, "readiness": c.ReadinessProbe} {
		if p == nil || p.HTTPGet == nil {
			t.Errorf("no %s probe over HTTP", name)
			continue
		}
		want := map[string]string{"liveness": probe.LivePath, "readiness": probe.ReadyPath}[name]
		if p.HTTPGet.Path != want {
			t.Errorf("%s probe path %q, want %q", name, p.HTTPGet.Path, want)
		}
		if pp := p.HTTPGet.Port; pp.String() != "metrics" && pp.IntValue() != port {
			t.Errorf("%s probe port %v, want metrics or %d", name, pp.String(), port)
		}
		resp, err := http.Get(srv.URL + p.HTTPGet.Path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusNotFound {
			t.Errorf("%s probe path %s is not served", name, p.HTTPGet.Path)
		}
	}
	if c.LivenessProbe != nil && c.LivenessProbe.HTTPGet != nil && c.LivenessProbe.HTTPGet.Path == probe.ReadyPath {
		t.Error("the liveness probe reads readiness: a table outage would restart every pod")
	}

	// the grace period covers the graceful shutdown
	cfg := engine.Config{}
	opts := engine.ConsumerOptions{}
	if v := a["lease-duration"]; v != "" {
		if cfg.LeaseDuration, err = time.ParseDuration(v); err != nil {
			t.Fatal(err)
		}
	}
	if v := a["shutdown-timeout"]; v != "" {
		if opts.ShutdownTimeout, err = time.ParseDuration(v); err != nil {
			t.Fatal(err)
		}
	}
	opts.Config = cfg
	want := int64(math.Ceil((opts.ShutdownBound() + exitSlack).Seconds()))
	if g := spec.TerminationGracePeriodSeconds; g == nil || *g != want {
		got := "unset"
		if g != nil {
			got = strconv.FormatInt(*g, 10)
		}
		t.Errorf("terminationGracePeriodSeconds %s, want %d (the shutdown bound %v + %v)", got, want, opts.ShutdownBound(), exitSlack)
	}
	if c.Lifecycle != nil && c.Lifecycle.PreStop != nil {
		t.Error("a preStop hook: the workers serve no traffic through a Service, SIGTERM is enough")
	}

	// selectors, labels, the service account
	sel := d.Spec.Selector.MatchLabels
	for k, v := range sel {
		if d.Spec.Template.Labels[k] != v {
			t.Errorf("the pod template lacks the selector's label %s=%s", k, v)
		}
	}
	if m.pdb.Spec.Selector == nil || !equalMaps(m.pdb.Spec.Selector.MatchLabels, sel) {
		t.Errorf("the PDB selects %v, the Deployment %v", m.pdb.Spec.Selector, sel)
	}
	if m.pdb.Namespace != d.Namespace || m.account.Namespace != d.Namespace {
		t.Errorf("namespaces: deployment %q, pdb %q, service account %q", d.Namespace, m.pdb.Namespace, m.account.Namespace)
	}
	if spec.ServiceAccountName != m.account.Name {
		t.Errorf("serviceAccountName %q, the ServiceAccount is %q", spec.ServiceAccountName, m.account.Name)
	}
	if arn := m.account.Annotations["eks.amazonaws.com/role-arn"]; !regexp.MustCompile(`^arn:aws:iam::\d{12}:role/.+`).MatchString(arn) {
		t.Errorf("role ARN %q", arn)
	}
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestDeploymentFlagsAreTheExamples: every flag the Deployment passes is
// one the example program takes (go run ./examples/consumer -h).
func TestDeploymentFlagsAreTheExamples(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the example")
	}
	m := decodeManifests(t)
	cmd := exec.Command("go", "run", "./examples/consumer", "-h")
	cmd.Dir = ".."
	out, _ := cmd.CombinedOutput() // -h exits 2
	if !strings.Contains(string(out), "-stream") {
		t.Fatalf("the example's usage:\n%s", out)
	}
	for name := range args(m.deployment.Spec.Template.Spec.Containers[0]) {
		if !regexp.MustCompile(`(?m)^\s+-` + regexp.QuoteMeta(name) + `\b`).Match(out) {
			t.Errorf("the Deployment passes -%s, which the example does not take:\n%s", name, out)
		}
	}
}

// scrapeConfig is the part of a Prometheus configuration the test reads.
type scrapeConfig struct {
	Global struct {
		ScrapeInterval     string `json:"scrape_interval"`
		EvaluationInterval string `json:"evaluation_interval"`
	} `json:"global"`
	RuleFiles     []string `json:"rule_files"`
	ScrapeConfigs []struct {
		JobName             string `json:"job_name"`
		KubernetesSDConfigs []struct {
			Role string `json:"role"`
		} `json:"kubernetes_sd_configs"`
		RelabelConfigs []relabel `json:"relabel_configs"`
	} `json:"scrape_configs"`
}

type relabel struct {
	SourceLabels []string `json:"source_labels"`
	Separator    string   `json:"separator"`
	Regex        string   `json:"regex"`
	Action       string   `json:"action"`
	Replacement  *string  `json:"replacement"`
	TargetLabel  string   `json:"target_label"`
}

// apply runs Prometheus's relabeling (actions keep and replace) on labels;
// false: the target is dropped.
func apply(rules []relabel, labels map[string]string) (bool, error) {
	for _, r := range rules {
		sep := r.Separator
		if sep == "" {
			sep = ";"
		}
		var vals []string
		for _, s := range r.SourceLabels {
			vals = append(vals, labels[s])
		}
		val := strings.Join(vals, sep)
		expr := r.Regex
		if expr == "" {
			expr = "(.*)"
		}
		re, err := regexp.Compile("^(?:" + expr + ")$")
		if err != nil {
			return false, err
		}
		switch r.Action {
		case "keep":
			if !re.MatchString(val) {
				return false, nil
			}
		case "", "replace":
			m := re.FindStringSubmatchIndex(val)
			if m == nil {
				continue
			}
			repl := "$1"
			if r.Replacement != nil {
				repl = *r.Replacement
			}
			labels[r.TargetLabel] = string(re.ExpandString(nil, repl, val, m))
		default:
			return false, fmt.Errorf("action %q not handled", r.Action)
		}
	}
	return true, nil
}

// TestScrapeConfig applies the scrape configuration's relabeling to a pod
// of the Deployment and to a pod without the annotations.
func TestScrapeConfig(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("prometheus", "prometheus.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var sc scrapeConfig
	if err := yaml.UnmarshalStrict(b, &sc); err != nil {
		t.Fatalf("prometheus.yml: %v", err)
	}
	if !slices.Contains(sc.RuleFiles, "shardlease-rules.yaml") || len(sc.ScrapeConfigs) != 1 || len(sc.ScrapeConfigs[0].KubernetesSDConfigs) != 1 ||
		sc.ScrapeConfigs[0].KubernetesSDConfigs[0].Role != "pod" {
		t.Fatalf("prometheus.yml: %+v", sc)
	}
	d := decodeManifests(t).deployment
	meta := func(ann, labels map[string]string) map[string]string {
		l := map[string]string{"__address__": "10.1.2.3:8080", "__metrics_path__": "/metrics", "__meta_kubernetes_namespace": "orders",
			"__meta_kubernetes_pod_name": "orders-consumer-7d9f-abcde"}
		for k, v := range ann {
			l["__meta_kubernetes_pod_annotation_"+sanitize(k)] = v
		}
		for k, v := range labels {
			l["__meta_kubernetes_pod_label_"+sanitize(k)] = v
		}
		return l
	}
	pod := meta(d.Spec.Template.Annotations, d.Spec.Template.Labels)
	keep, err := apply(sc.ScrapeConfigs[0].RelabelConfigs, pod)
	if err != nil {
		t.Fatal(err)
	}
	if !keep || pod["__address__"] != "10.1.2.3:9464" || pod["__metrics_path__"] != "/metrics" || pod["job"] != "orders-consumer" ||
		pod["pod"] != "orders-consumer-7d9f-abcde" {
		t.Errorf("the Deployment's pod relabeled to %v (kept %v)", pod, keep)
	}
	other := meta(nil, map[string]string{"app": "web"})
	if keep, _ := apply(sc.ScrapeConfigs[0].RelabelConfigs, other); keep {
		t.Error("a pod without prometheus.io/scrape is scraped")
	}
}

// sanitize is Kubernetes discovery's label name mangling.
func sanitize(s string) string {
	return regexp.MustCompile(`[^a-zA-Z0-9_]`).ReplaceAllString(s, "_")
}

// TestIAMPolicyIsTheDocs: deploy/aws/iam-policy.json is the policy
// docs/aws.md gives (its first json block), and valid JSON.
func TestIAMPolicyIsTheDocs(t *testing.T) {
	file, err := os.ReadFile(filepath.Join("aws", "iam-policy.json"))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join("..", "docs", "aws.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(doc), "```json\n")
	block, _, ok2 := strings.Cut(rest, "```")
	if !ok || !ok2 {
		t.Fatal("docs/aws.md has no json block")
	}
	var a, b any
	if err := json.Unmarshal(file, &a); err != nil {
		t.Fatalf("iam-policy.json: %v", err)
	}
	if err := json.Unmarshal([]byte(block), &b); err != nil {
		t.Fatalf("docs/aws.md's policy: %v", err)
	}
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	if !bytes.Equal(ja, jb) {
		t.Errorf("deploy/aws/iam-policy.json and docs/aws.md's policy differ:\n%s\n%s", ja, jb)
	}
}
