package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/yaml"
)

// The soak's Kubernetes manifests (deploy/soak) cannot be applied here (no
// cluster, no Docker): TestSoakManifests decodes them strictly into the
// API's types and checks that what the pods run is what simrun accepts.

// decodeStrict decodes one manifest into v, refusing unknown or
// duplicated fields (a typo in a field name is an error, not a default).
func decodeStrict(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "deploy", "soak", path))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(b, []byte("\n---")) {
		t.Fatalf("%s: one object a file", path)
	}
	if err := yaml.UnmarshalStrict(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// soakContainer returns the pod's only container and checks what every
// pod of the soak must have.
func soakContainer(t *testing.T, what string, spec *corev1.PodSpec) *corev1.Container {
	t.Helper()
	if len(spec.Containers) != 1 {
		t.Fatalf("%s: %d containers, want 1", what, len(spec.Containers))
	}
	c := &spec.Containers[0]
	if spec.RestartPolicy != corev1.RestartPolicyNever {
		t.Errorf("%s: restartPolicy %q, want Never (a pod failure policy needs it; a soak resumes in a new pod)", what, spec.RestartPolicy)
	}
	if c.Image == "" || len(c.Command) != 0 {
		t.Errorf("%s: image %q, command %v: want the image's entrypoint (simrun) with args", what, c.Image, c.Command)
	}
	if c.Resources.Limits.Memory().IsZero() || c.Resources.Requests.Cpu().IsZero() {
		t.Errorf("%s: want a CPU request and a memory limit: %+v", what, c.Resources)
	}
	if sc := c.SecurityContext; sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
		t.Errorf("%s: want a read-only root file system (simrun writes to its volume only)", what)
	}
	if spec.SecurityContext == nil || spec.SecurityContext.RunAsNonRoot == nil || !*spec.SecurityContext.RunAsNonRoot {
		t.Errorf("%s: want runAsNonRoot (the image runs as nonroot)", what)
	}
	return c
}

// claimAt returns the claim mounted at the container's mount and its path.
func claimAt(t *testing.T, what string, spec *corev1.PodSpec, c *corev1.Container) (claim string, mount corev1.VolumeMount) {
	t.Helper()
	if len(c.VolumeMounts) != 1 || len(spec.Volumes) != 1 || spec.Volumes[0].Name != c.VolumeMounts[0].Name || spec.Volumes[0].PersistentVolumeClaim == nil {
		t.Fatalf("%s: want one volume, a persistent volume claim, mounted once: %+v %+v", what, spec.Volumes, c.VolumeMounts)
	}
	return spec.Volumes[0].PersistentVolumeClaim.ClaimName, c.VolumeMounts[0]
}

// flagValue returns the value of -name in args ("" if absent).
func flagValue(args []string, name string) string {
	if i := slices.Index(args, "-"+name); i >= 0 && i+1 < len(args) {
		return args[i+1]
	}
	return ""
}

// TestSoakManifests: the Indexed Job runs completions partitions, each of
// which simrun parses (with the index the Job sets) as its own partition
// of the range, writing under the shared volume's mount; the volume can be
// shared by pods on any node; the merge Job reads that volume with
// -soak-merge; the image builds simrun with the module's Go.
func TestSoakManifests(t *testing.T) {
	var job batchv1.Job
	decodeStrict(t, "job.yaml", &job)
	if job.APIVersion != "batch/v1" || job.Kind != "Job" {
		t.Fatalf("job.yaml: %s %s, want batch/v1 Job", job.APIVersion, job.Kind)
	}
	s := &job.Spec
	if s.CompletionMode == nil || *s.CompletionMode != batchv1.IndexedCompletion {
		t.Fatalf("job.yaml: completionMode %v, want Indexed (the pods' JOB_COMPLETION_INDEX is their partition)", s.CompletionMode)
	}
	if s.Completions == nil || s.Parallelism == nil {
		t.Fatal("job.yaml: want completions (the partitions) and parallelism")
	}
	if *s.Completions < 2 || *s.Parallelism < 1 || *s.Parallelism > *s.Completions {
		t.Fatalf("job.yaml: completions %d, parallelism %d: want 2 or more partitions, at most as many pods at once", *s.Completions, *s.Parallelism)
	}
	n := int(*s.Completions)
	if s.BackoffLimitPerIndex == nil {
		t.Error("job.yaml: want backoffLimitPerIndex: a partition that crashed is retried on its own")
	}
	c := soakContainer(t, "job.yaml", &s.Template.Spec)
	// a partition that found a failing seed exits 1: failing its index,
	// not retrying it
	failIndex := false
	if p := s.PodFailurePolicy; p != nil {
		for _, r := range p.Rules {
			if e := r.OnExitCodes; r.Action == batchv1.PodFailurePolicyActionFailIndex && e != nil &&
				e.Operator == batchv1.PodFailurePolicyOnExitCodesOpIn && slices.Contains(e.Values, int32(exitViolation)) &&
				(e.ContainerName == nil || *e.ContainerName == c.Name) {
				failIndex = true
			}
		}
	}
	if !failIndex {
		t.Errorf("job.yaml: want a pod failure policy that fails the index on exit %d (a finding)", exitViolation)
	}
	claim, mount := claimAt(t, "job.yaml", &s.Template.Spec, c)
	if mount.ReadOnly {
		t.Error("job.yaml: the soak's volume is mounted read-only")
	}
	if d := flagValue(c.Args, "soak-dir"); d != mount.MountPath {
		t.Errorf("job.yaml: -soak-dir %q, want the volume's mount %q", d, mount.MountPath)
	}
	if got := flagValue(c.Args, "partitions"); got != strconv.Itoa(n) {
		t.Errorf("job.yaml: -partitions %q, want completions (%d)", got, n)
	}
	if cpu := c.Resources.Requests.Cpu(); flagValue(c.Args, "parallel") != strconv.FormatInt(cpu.Value(), 10) || cpu.MilliValue()%1000 != 0 {
		t.Errorf("job.yaml: -parallel %q, want the CPU request (%v): a seed runs on one core", flagValue(c.Args, "parallel"), cpu)
	}
	var env []string
	for _, e := range c.Env {
		env = append(env, e.Name)
		if e.Name == "GOMEMLIMIT" {
			if q, err := resource.ParseQuantity(strings.TrimSuffix(e.Value, "B")); err != nil || q.Cmp(*c.Resources.Limits.Memory()) >= 0 {
				t.Errorf("job.yaml: GOMEMLIMIT %q, want it below the memory limit %v", e.Value, c.Resources.Limits.Memory())
			}
		}
	}
	// every pod parses its args as partition i of n, its folder on the
	// volume, and together they run every seed once
	seen := map[string]bool{}
	covered := 0
	var first, last uint64
	for i := 0; i < n; i++ {
		t.Setenv(envIndex, strconv.Itoa(i))
		conf, err := parseArgs(c.Args, &bytes.Buffer{})
		if err != nil {
			t.Fatalf("job.yaml: pod %d: simrun refuses %q: %v", i, c.Args, err)
		}
		if !conf.soak || conf.part != (partition{i, n}) {
			t.Fatalf("job.yaml: pod %d runs soak %v partition %v, want partition %d/%d", i, conf.soak, conf.part, i, n)
		}
		if !strings.HasPrefix(conf.soakState, mount.MountPath+"/") || !strings.HasPrefix(conf.findings, mount.MountPath+"/") || seen[conf.soakState] {
			t.Fatalf("job.yaml: pod %d writes its state to %s and findings to %s: want its own, on the volume", i, conf.soakState, conf.findings)
		}
		seen[conf.soakState] = true
		first, last = conf.first, conf.last
		covered += conf.part.size(conf.first, conf.last)
	}
	if covered != int(last-first+1) {
		t.Errorf("job.yaml: the partitions run %d seeds of %d", covered, last-first+1)
	}
	t.Logf("job.yaml: %d partitions of seeds %d-%d, env %v", n, first, last, env)

	var pvc corev1.PersistentVolumeClaim
	decodeStrict(t, "pvc.yaml", &pvc)
	if pvc.Kind != "PersistentVolumeClaim" || pvc.Name != claim {
		t.Errorf("pvc.yaml: %s %q, want the claim the Job mounts (%q)", pvc.Kind, pvc.Name, claim)
	}
	if !slices.Contains(pvc.Spec.AccessModes, corev1.ReadWriteMany) {
		t.Errorf("pvc.yaml: access modes %v: the pods of the Job write from any node, want ReadWriteMany", pvc.Spec.AccessModes)
	}

	var merge batchv1.Job
	decodeStrict(t, "merge-job.yaml", &merge)
	mc := soakContainer(t, "merge-job.yaml", &merge.Spec.Template.Spec)
	mclaim, mmount := claimAt(t, "merge-job.yaml", &merge.Spec.Template.Spec, mc)
	if mclaim != claim || mc.Image != c.Image {
		t.Errorf("merge-job.yaml: claim %q image %q, want the soak's (%q, %q)", mclaim, mc.Image, claim, c.Image)
	}
	conf, err := parseArgs(mc.Args, &bytes.Buffer{})
	if err != nil || !slices.Equal(conf.mergeDirs, []string{mmount.MountPath}) {
		t.Fatalf("merge-job.yaml: args %q: %v (merges %v, want the volume's mount %s)", mc.Args, err, conf, mmount.MountPath)
	}

	// the pod to copy the files off: the same volume, read-only
	var files corev1.Pod
	decodeStrict(t, "files-pod.yaml", &files)
	if files.Kind != "Pod" || len(files.Spec.Containers) != 1 {
		t.Fatalf("files-pod.yaml: %s with %d containers, want a Pod of one", files.Kind, len(files.Spec.Containers))
	}
	fclaim, fmount := claimAt(t, "files-pod.yaml", &files.Spec, &files.Spec.Containers[0])
	if fclaim != claim || fmount.MountPath != mount.MountPath || !fmount.ReadOnly {
		t.Errorf("files-pod.yaml: claim %q at %s (read-only %v), want the soak's %q at %s, read-only", fclaim, fmount.MountPath, fmount.ReadOnly, claim, mount.MountPath)
	}

	// the image: a multi-stage build of ./cmd/simrun with the module's Go,
	// run from a distroless image as the entrypoint
	df, err := os.ReadFile(filepath.Join("..", "..", "deploy", "soak", "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	froms := regexp.MustCompile(`(?m)^FROM\s+(\S+)`).FindAllStringSubmatch(string(df), -1)
	mod, err := os.ReadFile(filepath.Join("..", "..", "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	gover := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindSubmatch(mod)
	switch {
	case len(froms) < 2 || gover == nil:
		t.Fatalf("Dockerfile: stages %v, go.mod's go %q: want a build stage and a final one", froms, gover)
	case froms[0][1] != "golang:"+string(gover[1]):
		t.Errorf("Dockerfile: builds with %s, go.mod wants go %s", froms[0][1], gover[1])
	case !strings.HasPrefix(froms[len(froms)-1][1], "gcr.io/distroless/"):
		t.Errorf("Dockerfile: the final image is %s, want a distroless one", froms[len(froms)-1][1])
	case !strings.Contains(string(df), "./cmd/simrun") || !strings.Contains(string(df), `ENTRYPOINT ["/simrun"]`) || !strings.Contains(string(df), "CGO_ENABLED=0"):
		t.Error("Dockerfile: want a static build of ./cmd/simrun as the entrypoint /simrun")
	}
}
