// Package kubernetes holds only tests: the manifests beside them are a
// kustomization, checked here the way kubectl and a cluster would take them.
//
// The kustomization is rendered with kustomize's own library (what
// kubectl apply -k runs). Every object is then validated against the OpenAPI
// v3 schemas that Kubernetes v1.37.2 publishes (api/openapi-spec/v3 of the
// k8s.io/kubernetes module, fetched through the Go module proxy and checked
// against its go.sum hash), made strict the way kubeconform's strict mode
// is: an object may have no property its schema does not name. It is also
// decoded, rejecting unknown fields, into the k8s.io/api v0.37.2 types, and
// what the sidecar promises (token, probes, limits, scraping, network
// policy, security context) is checked on those.
package kubernetes

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"go.yaml.in/yaml/v3"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	sigsyaml "sigs.k8s.io/yaml"
)

// The Kubernetes release the manifests are validated against. k8s.io/api in
// go.mod is the same release (v0.37.2).
const (
	k8sModule  = "k8s.io/kubernetes"
	k8sVersion = "v1.37.2"
	// k8sModuleSum is the module's go.sum hash: the schemas are those of the
	// release, byte for byte, whatever proxy served them.
	k8sModuleSum = "h1:A2VDEiObzkYqFTKhSsn0ZEb0RlLEXpHWj93gi2HqEwE="
)

// object is one rendered manifest.
type object struct {
	apiVersion, kind, name string
	value                  map[string]any
	json                   []byte
}

// render builds the kustomization in this directory as kubectl apply -k does.
func render(t *testing.T) []object {
	t.Helper()
	rm, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), ".")
	if err != nil {
		t.Fatalf("kustomize build: %v", err)
	}
	var objs []object
	for _, r := range rm.Resources() {
		m, err := r.Map()
		if err != nil {
			t.Fatal(err)
		}
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		var v map[string]any // float64 numbers, as a JSON decoder gives them
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatal(err)
		}
		objs = append(objs, object{apiVersion: r.GetApiVersion(), kind: r.GetKind(), name: r.GetName(), value: v, json: b})
	}
	if len(objs) == 0 {
		t.Fatal("the kustomization renders no object")
	}
	return objs
}

// openAPIDir returns api/openapi-spec/v3 of the pinned Kubernetes release.
func openAPIDir(t *testing.T) string {
	t.Helper()
	cmd := exec.Command("go", "mod", "download", "-json", k8sModule+"@"+k8sVersion)
	cmd.Dir = t.TempDir() // outside this module: go.mod stays as it is
	cmd.Env = append(os.Environ(), "GOFLAGS=", "GOWORK=off")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, runErr := cmd.Output()
	var mod struct{ Dir, Sum, Error string }
	if err := json.Unmarshal(out, &mod); err != nil || runErr != nil || mod.Error != "" {
		t.Fatalf("go mod download %s@%s: %v %s %s", k8sModule, k8sVersion, runErr, mod.Error, stderr.String())
	}
	if mod.Sum != k8sModuleSum {
		t.Fatalf("%s@%s has hash %s, want %s", k8sModule, k8sVersion, mod.Sum, k8sModuleSum)
	}
	return filepath.Join(mod.Dir, "api", "openapi-spec", "v3")
}

// schemaIndex finds the schema of a group, version and kind in the
// release's per-group-version OpenAPI documents.
type schemaIndex struct {
	dir  string
	docs map[string]map[string]*openapi3.Schema // apiVersion -> kind -> schema
}

func (ix *schemaIndex) schema(t *testing.T, apiVersion, kind string) *openapi3.Schema {
	t.Helper()
	if kinds, ok := ix.docs[apiVersion]; ok {
		return kinds[kind]
	}
	// "v1" is api/v1; "apps/v1" is apis/apps/v1.
	file := "api__" + apiVersion + "_openapi.json"
	if group, version, ok := strings.Cut(apiVersion, "/"); ok {
		file = "apis__" + group + "__" + version + "_openapi.json"
	}
	doc, err := openapi3.NewLoader().LoadFromFile(filepath.Join(ix.dir, file))
	if err != nil {
		t.Fatalf("Kubernetes %s has no OpenAPI document for %s: %v", k8sVersion, apiVersion, err)
	}
	kinds := map[string]*openapi3.Schema{}
	for _, ref := range doc.Components.Schemas {
		s := ref.Value
		strict(s)
		gvks, _ := s.Extensions["x-kubernetes-group-version-kind"].([]any)
		for _, g := range gvks {
			gvk, _ := g.(map[string]any)
			group, _ := gvk["group"].(string)
			version, _ := gvk["version"].(string)
			k, _ := gvk["kind"].(string)
			if path.Join(group, version) == apiVersion {
				kinds[k] = s
			}
		}
	}
	ix.docs[apiVersion] = kinds
	return kinds[kind]
}

// strict forbids properties a schema does not name, as kubeconform -strict
// does (the published schemas allow any; the API server drops or refuses
// them). Maps (additionalProperties given) and schemas that keep unknown
// fields on purpose are left alone.
func strict(s *openapi3.Schema) {
	if len(s.Properties) == 0 || s.AdditionalProperties.Has != nil || s.AdditionalProperties.Schema != nil {
		return
	}
	if keep, _ := s.Extensions["x-kubernetes-preserve-unknown-fields"].(bool); keep {
		return
	}
	no := false
	s.AdditionalProperties.Has = &no
}

func TestManifestsMatchKubernetesSchemas(t *testing.T) {
	objs := render(t)
	ix := &schemaIndex{dir: openAPIDir(t), docs: map[string]map[string]*openapi3.Schema{}}
	for _, o := range objs {
		t.Run(o.kind+"/"+o.name, func(t *testing.T) {
			s := ix.schema(t, o.apiVersion, o.kind)
			if s == nil {
				t.Fatalf("Kubernetes %s has no kind %s in %s", k8sVersion, o.kind, o.apiVersion)
			}
			if err := s.VisitJSON(o.value, openapi3.MultiErrors()); err != nil {
				t.Errorf("%s %s does not match the Kubernetes %s schema:\n%s", o.kind, o.name, k8sVersion, strings.Join(schemaErrors(err), "\n"))
			}
		})
	}
}

// schemaErrors lists each schema violation as "/json/pointer: reason"; the
// validator's own message quotes whole schemas.
func schemaErrors(err error) []string {
	var me openapi3.MultiError
	if errors.As(err, &me) {
		var out []string
		for _, e := range me {
			out = append(out, schemaErrors(e)...)
		}
		return out
	}
	var se *openapi3.SchemaError
	if errors.As(err, &se) {
		if se.Origin != nil {
			return schemaErrors(se.Origin)
		}
		return []string{"/" + strings.Join(se.JSONPointer(), "/") + ": " + se.Reason}
	}
	return []string{err.Error()}
}

// decode decodes the one rendered object of kind into out, refusing unknown
// and duplicate fields.
func decode(t *testing.T, objs []object, kind string, out any) {
	t.Helper()
	found := false
	for _, o := range objs {
		if o.kind != kind {
			continue
		}
		if found {
			t.Fatalf("the kustomization renders more than one %s", kind)
		}
		found = true
		if err := sigsyaml.UnmarshalStrict(o.json, out); err != nil {
			t.Fatalf("%s %s does not decode into the k8s.io/api types: %v", kind, o.name, err)
		}
	}
	if !found {
		t.Fatalf("the kustomization renders no %s", kind)
	}
}

// image is what the tests need from the repository's Dockerfile.
type image struct {
	uid  int64
	home string
}

func dockerfileImage(t *testing.T) image {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`useradd --uid (\d+) .*--home-dir (\S+)`).FindSubmatch(b)
	if m == nil {
		t.Fatal("Dockerfile: no useradd --uid N ... --home-dir DIR")
	}
	uid, _ := strconv.ParseInt(string(m[1]), 10, 64)
	return image{uid: uid, home: string(m[2])}
}

func findContainer(cs []corev1.Container, name string) *corev1.Container {
	for i := range cs {
		if cs[i].Name == name {
			return &cs[i]
		}
	}
	return nil
}

func envVar(c *corev1.Container, name string) (int, *corev1.EnvVar) {
	for i := range c.Env {
		if c.Env[i].Name == name {
			return i, &c.Env[i]
		}
	}
	return -1, nil
}

func volume(pod *corev1.PodSpec, name string) *corev1.Volume {
	for i := range pod.Volumes {
		if pod.Volumes[i].Name == name {
			return &pod.Volumes[i]
		}
	}
	return nil
}

// mountAt returns the mount whose path is dir, or nil.
func mountAt(c *corev1.Container, dir string) *corev1.VolumeMount {
	for i := range c.VolumeMounts {
		if c.VolumeMounts[i].MountPath == dir {
			return &c.VolumeMounts[i]
		}
	}
	return nil
}

func TestSnapexecSidecar(t *testing.T) {
	objs := render(t)
	var dep appsv1.Deployment
	decode(t, objs, "Deployment", &dep)
	img := dockerfileImage(t)
	pod := &dep.Spec.Template.Spec
	c := findContainer(pod.InitContainers, "snapexec")
	if c == nil {
		t.Fatalf("no init container snapexec (a native sidecar) in %s", dep.Name)
	}
	if c.RestartPolicy == nil || *c.RestartPolicy != corev1.ContainerRestartPolicyAlways {
		t.Errorf("snapexec restartPolicy = %v, want Always (a native sidecar)", c.RestartPolicy)
	}
	name, tag, _ := strings.Cut(c.Image, ":")
	if name == "" || tag == "" || tag == "latest" {
		t.Errorf("snapexec image = %q, want a name and a version tag", c.Image)
	}
	var port *corev1.ContainerPort
	for i := range c.Ports {
		if c.Ports[i].Name == "http" {
			port = &c.Ports[i]
		}
	}
	if port == nil {
		t.Fatal("snapexec has no port named http")
	}
	portText := strconv.Itoa(int(port.ContainerPort))

	t.Run("listens on the port it declares", func(t *testing.T) {
		if _, addr := envVar(c, "SNAPEXEC_ADDR"); addr == nil || addr.Value != "0.0.0.0:"+portText {
			t.Errorf("SNAPEXEC_ADDR = %+v, want 0.0.0.0:%s", addr, portText)
		}
	})

	t.Run("token from a Secret file", func(t *testing.T) {
		if _, v := envVar(c, "SNAPEXEC_TOKEN"); v != nil {
			t.Errorf("SNAPEXEC_TOKEN is set; the token must reach snapexec as a file only")
		}
		for _, e := range c.Env {
			if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
				t.Errorf("env %s comes from a Secret; secrets must not enter the environment commands inherit", e.Name)
			}
		}
		_, file := envVar(c, "SNAPEXEC_TOKEN_FILE")
		if file == nil || !path.IsAbs(file.Value) {
			t.Fatalf("SNAPEXEC_TOKEN_FILE = %+v, want an absolute path", file)
		}
		m := mountAt(c, path.Dir(file.Value))
		if m == nil || !m.ReadOnly {
			t.Fatalf("nothing is mounted read-only at %s", path.Dir(file.Value))
		}
		v := volume(pod, m.Name)
		if v == nil || v.Secret == nil {
			t.Fatalf("volume %s is not a Secret", m.Name)
		}
		item := slices.IndexFunc(v.Secret.Items, func(k corev1.KeyToPath) bool { return k.Path == path.Base(file.Value) })
		if item < 0 {
			t.Fatalf("Secret volume %s has no item at %s", v.Name, path.Base(file.Value))
		}
		if mode := v.Secret.DefaultMode; mode == nil || *mode != 0o440 {
			t.Errorf("token file mode = %v, want 0440 (owner and fsGroup read it)", mode)
		}
		if pod.SecurityContext == nil || pod.SecurityContext.FSGroup == nil || *pod.SecurityContext.FSGroup != img.uid {
			t.Errorf("fsGroup = %v, want %d: the token file is readable through its group", pod.SecurityContext, img.uid)
		}
	})

	t.Run("Host check accepts the scrape", func(t *testing.T) {
		ipAt, ip := envVar(c, "POD_IP")
		hostsAt, hosts := envVar(c, "SNAPEXEC_ALLOWED_HOSTS")
		if ip == nil || ip.ValueFrom == nil || ip.ValueFrom.FieldRef == nil || ip.ValueFrom.FieldRef.FieldPath != "status.podIP" {
			t.Fatalf("POD_IP = %+v, want the downward API's status.podIP", ip)
		}
		// $(VAR) expands only variables defined earlier in the list.
		if hosts == nil || hosts.Value != "$(POD_IP)" || hostsAt < ipAt {
			t.Errorf("SNAPEXEC_ALLOWED_HOSTS = %+v at %d, want $(POD_IP) after POD_IP (at %d)", hosts, hostsAt, ipAt)
		}
	})

	t.Run("probes", func(t *testing.T) {
		for _, p := range []struct {
			name  string
			probe *corev1.Probe
			path  string
		}{
			{"readiness", c.ReadinessProbe, "/readyz"},
			{"liveness", c.LivenessProbe, "/healthz"},
			{"startup", c.StartupProbe, "/healthz"},
		} {
			if p.probe == nil || p.probe.HTTPGet == nil {
				t.Errorf("%s probe = %+v, want an HTTP GET of %s", p.name, p.probe, p.path)
				continue
			}
			get := p.probe.HTTPGet
			if get.Path != p.path || (get.Port.String() != port.Name && get.Port.String() != portText) {
				t.Errorf("%s probe GETs %s on port %s, want %s on %s", p.name, get.Path, get.Port.String(), p.path, port.Name)
			}
		}
	})

	t.Run("resources", func(t *testing.T) {
		for _, cc := range slices.Concat(pod.InitContainers, pod.Containers) {
			for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
				req, hasReq := cc.Resources.Requests[r]
				lim, hasLim := cc.Resources.Limits[r]
				if !hasReq || !hasLim || lim.Cmp(req) < 0 {
					t.Errorf("container %s %s: request %v, limit %v; want both, limit >= request", cc.Name, r, req.String(), lim.String())
				}
			}
		}
	})

	t.Run("Prometheus annotations", func(t *testing.T) {
		want := map[string]string{"prometheus.io/scrape": "true", "prometheus.io/port": portText, "prometheus.io/path": "/metrics"}
		for k, v := range want {
			if got := dep.Spec.Template.Annotations[k]; got != v {
				t.Errorf("pod annotation %s = %q, want %q", k, got, v)
			}
		}
	})

	t.Run("security context", func(t *testing.T) {
		psc := pod.SecurityContext
		if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.RunAsUser == nil || *psc.RunAsUser != img.uid {
			t.Errorf("pod securityContext = %+v, want runAsNonRoot and runAsUser %d (the image's user)", psc, img.uid)
		}
		if psc == nil || psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
			t.Errorf("pod seccompProfile = %+v, want RuntimeDefault", psc)
		}
		if pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
			t.Errorf("automountServiceAccountToken = %v, want false: commands must not get an API credential", pod.AutomountServiceAccountToken)
		}
		if pod.HostNetwork || pod.HostPID || pod.HostIPC {
			t.Errorf("the pod shares a host namespace")
		}
		for _, cc := range slices.Concat(pod.InitContainers, pod.Containers) {
			sc := cc.SecurityContext
			switch {
			case sc == nil:
				t.Errorf("container %s has no securityContext", cc.Name)
			case sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation:
				t.Errorf("container %s may escalate privileges", cc.Name)
			case sc.Privileged != nil && *sc.Privileged:
				t.Errorf("container %s is privileged", cc.Name)
			case sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem:
				t.Errorf("container %s has a writable root filesystem", cc.Name)
			case sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) > 0:
				t.Errorf("container %s capabilities = %+v, want drop [ALL] and no add", cc.Name, sc.Capabilities)
			}
		}
	})

	// The published schemas carry no enumerations; the API server checks
	// these values itself, so check the ones the pod sets.
	t.Run("enumerated values", func(t *testing.T) {
		pulls := []corev1.PullPolicy{corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever}
		protocols := []corev1.Protocol{corev1.ProtocolTCP, corev1.ProtocolUDP, corev1.ProtocolSCTP}
		for _, cc := range slices.Concat(pod.InitContainers, pod.Containers) {
			if !slices.Contains(pulls, cc.ImagePullPolicy) {
				t.Errorf("container %s imagePullPolicy = %q, want one of %v", cc.Name, cc.ImagePullPolicy, pulls)
			}
			for _, p := range cc.Ports {
				if !slices.Contains(protocols, p.Protocol) {
					t.Errorf("container %s port %s protocol = %q, want one of %v", cc.Name, p.Name, p.Protocol, protocols)
				}
			}
		}
	})

	t.Run("writable where commands write", func(t *testing.T) {
		for _, dir := range []string{"/tmp", img.home, c.WorkingDir} {
			m := mountAt(c, dir)
			if m == nil || m.ReadOnly {
				t.Errorf("nothing writable is mounted at %s; the root filesystem is read-only", dir)
				continue
			}
			if v := volume(pod, m.Name); v == nil || v.EmptyDir == nil || v.EmptyDir.SizeLimit == nil {
				t.Errorf("volume %s at %s is not an emptyDir with a sizeLimit", m.Name, dir)
			}
		}
	})
}

func TestNetworkPolicy(t *testing.T) {
	objs := render(t)
	var dep appsv1.Deployment
	var np networkingv1.NetworkPolicy
	var ns corev1.Namespace
	decode(t, objs, "Deployment", &dep)
	decode(t, objs, "NetworkPolicy", &np)
	decode(t, objs, "Namespace", &ns)

	sel, err := metav1.LabelSelectorAsSelector(&np.Spec.PodSelector)
	if err != nil || sel.Empty() || !sel.Matches(labels.Set(dep.Spec.Template.Labels)) {
		t.Errorf("podSelector %v does not select the pod %v", sel, dep.Spec.Template.Labels)
	}
	if np.Namespace != dep.Namespace || dep.Namespace != ns.Name {
		t.Errorf("namespaces: policy %q, deployment %q, namespace object %q; want one", np.Namespace, dep.Namespace, ns.Name)
	}
	if !slices.Equal(np.Spec.PolicyTypes, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}) {
		t.Errorf("policyTypes = %v, want [Ingress]", np.Spec.PolicyTypes)
	}
	c := findContainer(dep.Spec.Template.Spec.InitContainers, "snapexec")
	if c == nil || len(c.Ports) != 1 {
		t.Fatalf("snapexec container %v, want one port", c)
	}
	if len(np.Spec.Ingress) != 1 {
		t.Fatalf("ingress = %+v, want one rule: Prometheus to snapexec", np.Spec.Ingress)
	}
	rule := np.Spec.Ingress[0]
	if len(rule.From) != 1 || rule.From[0].PodSelector != nil || rule.From[0].IPBlock != nil || rule.From[0].NamespaceSelector == nil ||
		!maps.Equal(rule.From[0].NamespaceSelector.MatchLabels, map[string]string{"kubernetes.io/metadata.name": "monitoring"}) ||
		len(rule.From[0].NamespaceSelector.MatchExpressions) > 0 {
		t.Errorf("ingress from = %+v, want exactly the namespace monitoring", rule.From)
	}
	if len(rule.Ports) != 1 || rule.Ports[0].Port == nil || rule.Ports[0].Port.IntValue() != int(c.Ports[0].ContainerPort) ||
		rule.Ports[0].Protocol == nil || *rule.Ports[0].Protocol != corev1.ProtocolTCP || rule.Ports[0].EndPort != nil {
		t.Errorf("ingress ports = %+v, want TCP %d only", rule.Ports, c.Ports[0].ContainerPort)
	}
	if got := ns.Labels["pod-security.kubernetes.io/enforce"]; got != "restricted" {
		t.Errorf("namespace %s enforces Pod Security %q, want restricted", ns.Name, got)
	}
}

// TestPrometheusScrape checks that the scrape job for the user's Prometheus
// finds the pod by the labels and annotations the Deployment has, in its
// namespace only, and sends the token.
func TestPrometheusScrape(t *testing.T) {
	objs := render(t)
	var dep appsv1.Deployment
	decode(t, objs, "Deployment", &dep)
	b, err := os.ReadFile("prometheus-scrape.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		ScrapeConfigs []struct {
			JobName             string `yaml:"job_name"`
			KubernetesSDConfigs []struct {
				Role       string
				Namespaces struct{ Names []string }
			} `yaml:"kubernetes_sd_configs"`
			Authorization struct {
				Type            string
				CredentialsFile string `yaml:"credentials_file"`
			}
			RelabelConfigs []struct {
				SourceLabels []string `yaml:"source_labels"`
				Regex        string
				Action       string
				TargetLabel  string `yaml:"target_label"`
				Replacement  string
			} `yaml:"relabel_configs"`
		} `yaml:"scrape_configs"`
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&cfg); err != nil {
		t.Fatalf("prometheus-scrape.yaml: %v", err)
	}
	if len(cfg.ScrapeConfigs) != 1 {
		t.Fatalf("prometheus-scrape.yaml has %d jobs, want 1", len(cfg.ScrapeConfigs))
	}
	job := cfg.ScrapeConfigs[0]
	if len(job.KubernetesSDConfigs) != 1 || job.KubernetesSDConfigs[0].Role != "pod" ||
		!slices.Equal(job.KubernetesSDConfigs[0].Namespaces.Names, []string{dep.Namespace}) {
		t.Errorf("discovery = %+v, want pods of the namespace %s only", job.KubernetesSDConfigs, dep.Namespace)
	}
	if job.Authorization.Type != "Bearer" || !path.IsAbs(job.Authorization.CredentialsFile) {
		t.Errorf("authorization = %+v, want Bearer from an absolute credentials_file", job.Authorization)
	}
	// Prometheus turns label and annotation names into label names this way.
	sanitize := regexp.MustCompile(`[^a-zA-Z0-9_]`)
	meta := func(prefix, name string) string { return prefix + sanitize.ReplaceAllString(name, "_") }
	keeps := map[string]string{}
	var pathFrom string
	for _, r := range job.RelabelConfigs {
		key := strings.Join(r.SourceLabels, ";")
		switch {
		case r.Action == "keep":
			keeps[key] = r.Regex
		case r.TargetLabel == "__metrics_path__":
			pathFrom = key
		}
	}
	tmpl := dep.Spec.Template
	c := findContainer(tmpl.Spec.InitContainers, "snapexec")
	if c == nil || len(c.Ports) != 1 {
		t.Fatalf("snapexec container %v, want one port", c)
	}
	var sidecarLabel string
	for k, v := range tmpl.Labels {
		if keeps[meta("__meta_kubernetes_pod_label_", k)] == v {
			sidecarLabel = k
		}
	}
	if sidecarLabel == "" || sidecarLabel == "app.kubernetes.io/name" {
		t.Errorf("no keep rule selects a label that marks the pod as having the sidecar (labels %v, keeps %v)", tmpl.Labels, keeps)
	}
	scrape := meta("__meta_kubernetes_pod_annotation_", "prometheus.io/scrape")
	if keeps[scrape] != tmpl.Annotations["prometheus.io/scrape"] {
		t.Errorf("keep on %s = %q, want the pod's annotation %q", scrape, keeps[scrape], tmpl.Annotations["prometheus.io/scrape"])
	}
	port := "__meta_kubernetes_pod_container_name;__meta_kubernetes_pod_container_port_name"
	if want := c.Name + ";" + c.Ports[0].Name; keeps[port] != want {
		t.Errorf("keep on %s = %q, want %q", port, keeps[port], want)
	}
	if want := meta("__meta_kubernetes_pod_annotation_", "prometheus.io/path"); pathFrom != want {
		t.Errorf("__metrics_path__ comes from %q, want %s", pathFrom, want)
	}
	if want := fmt.Sprint(c.Ports[0].ContainerPort); tmpl.Annotations["prometheus.io/port"] != want {
		t.Errorf("annotation prometheus.io/port = %q, want %s", tmpl.Annotations["prometheus.io/port"], want)
	}
}
