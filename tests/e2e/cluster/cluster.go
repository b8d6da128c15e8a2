// Package cluster starts a real Kubernetes control plane for the end-to-end tests: etcd,
// kube-apiserver, kube-controller-manager and kube-scheduler, built from source at the pinned
// version (scripts/e2e.sh builds them), on 127.0.0.1 with free ports and generated certificates,
// secure serving only, Node and RBAC authorization, service-account token signing and
// NodeRestriction. Everything it starts it stops (Stop, a signal, or the test binary's death);
// each component's log is kept in the cluster's folder.
package cluster

import (
	"context"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/component-base/featuregate"
	_ "k8s.io/kubernetes/pkg/features" // registers the Kubernetes feature gates
)

// Profile is a feature-gate configuration of the whole control plane.
type Profile struct {
	Name string
	// FeatureGates for every component ("" for the release's defaults).
	FeatureGates string
	// RuntimeConfig enables API versions beyond the defaults ("" for none).
	RuntimeConfig string
	// Kubelets: real kubelets join (scripts/node-e2e.sh), so the API server reaches them for
	// exec, logs and port-forward: at their InternalIP, else their host name, with a client
	// certificate of the cluster's CA, checking the kubelet's serving certificate against it.
	Kubelets bool
}

// Defaults is Kubernetes 1.37's defaults: no gate set, only the default API versions.
func Defaults() Profile { return Profile{Name: "defaults"} }

// AllDRA turns on every DRA gate the release has that is not locked to its default, read from
// the release's own feature-gate table (so a gate added upstream is on without an edit here),
// plus the gates the driver's trust model needs, and serves every resource.k8s.io version.
func AllDRA() Profile {
	table := utilfeature.DefaultFeatureGate.DeepCopy()
	specs := table.GetAll()
	dependencies := table.Dependencies()
	on := map[featuregate.Feature]bool{}
	var enable func(name featuregate.Feature)
	enable = func(name featuregate.Feature) {
		if on[name] {
			return
		}
		on[name] = true
		for _, dependency := range dependencies[name] { // e.g. DRAWorkloadResourceClaims needs GenericWorkload
			enable(dependency)
		}
	}
	for name := range specs {
		if strings.HasPrefix(string(name), "DRA") || name == "ServiceAccountTokenPodNodeInfo" || name == "NodeDeclaredFeatures" {
			enable(name)
		}
	}
	var gates []string
	for name := range on {
		if !specs[name].LockToDefault {
			gates = append(gates, string(name)+"=true")
		}
	}
	sort.Strings(gates)
	return Profile{
		Name:         "all-dra",
		FeatureGates: strings.Join(gates, ","),
		RuntimeConfig: "resource.k8s.io/v1beta1=true,resource.k8s.io/v1beta2=true,resource.k8s.io/v1alpha3=true," +
			// GenericWorkload (a dependency of DRAWorkloadResourceClaims): the scheduler waits for
			// PodGroups and Workloads to be served.
			"scheduling.k8s.io/v1beta1=true,scheduling.k8s.io/v1alpha3=true",
	}
}

// Cluster is a running control plane.
type Cluster struct {
	Profile Profile
	Dir     string // certificates, kubeconfigs, etcd's data, logs/
	URL     string // https://127.0.0.1:<port>
	// AdminKubeconfig authenticates as system:masters.
	AdminKubeconfig string
	Admin           *kubernetes.Clientset
	AdminConfig     *rest.Config
	pki             *pki
	processes       []*process
	bin             Binaries
	apiServerArgs   []string
}

// Binaries names the folder holding etcd, kube-apiserver, kube-controller-manager and
// kube-scheduler.
type Binaries string

func (b Binaries) path(name string) string { return filepath.Join(string(b), name) }

// Start brings up etcd, the API server (until /readyz), the controller manager and the
// scheduler. On error everything started is stopped again.
func Start(ctx context.Context, bin Binaries, dir string, profile Profile) (c *Cluster, err error) {
	if err := os.MkdirAll(filepath.Join(dir, "logs"), 0o755); err != nil {
		return nil, err
	}
	c = &Cluster{Profile: profile, Dir: dir, bin: bin}
	defer func() {
		if err != nil {
			c.Stop()
			err = fmt.Errorf("%w (component logs: %s)", err, filepath.Join(dir, "logs"))
		}
	}()
	if c.pki, err = newPKI(filepath.Join(dir, "pki")); err != nil {
		return c, fmt.Errorf("certificates: %w", err)
	}
	etcdURL, err := c.startEtcd(bin)
	if err != nil {
		return c, err
	}
	if err := c.startAPIServer(ctx, bin, etcdURL); err != nil {
		return c, err
	}
	for _, component := range []string{"kube-controller-manager", "kube-scheduler"} {
		if err := c.startComponent(bin, component); err != nil {
			return c, err
		}
	}
	return c, nil
}

// Stop ends every component, newest first.
func (c *Cluster) Stop() {
	for i := len(c.processes) - 1; i >= 0; i-- {
		c.processes[i].stop()
	}
	c.processes = nil
}

func (c *Cluster) startEtcd(bin Binaries) (string, error) {
	clientURL := fmt.Sprintf("http://127.0.0.1:%d", freePort())
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", freePort())
	p, err := startProcess(c.Dir, "etcd", bin.path("etcd"),
		"--name", "e2e", "--data-dir", filepath.Join(c.Dir, "etcd"),
		"--listen-client-urls", clientURL, "--advertise-client-urls", clientURL,
		"--listen-peer-urls", peerURL, "--initial-advertise-peer-urls", peerURL,
		"--initial-cluster", "e2e="+peerURL, "--log-level", "warn",
		"--quota-backend-bytes", "4294967296", "--unsafe-no-fsync")
	if err != nil {
		return "", err
	}
	c.processes = append(c.processes, p)
	return clientURL, waitFor(p, 60*time.Second, func() error {
		resp, err := http.Get(clientURL + "/health")
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("etcd /health: %s", resp.Status)
		}
		return nil
	})
}

func (c *Cluster) startAPIServer(ctx context.Context, bin Binaries, etcdURL string) error {
	port := freePort()
	c.URL = fmt.Sprintf("https://127.0.0.1:%d", port)
	args := []string{
		"--etcd-servers", etcdURL,
		"--bind-address", "127.0.0.1", "--advertise-address", "127.0.0.1",
		"--secure-port", fmt.Sprint(port), "--cert-dir", filepath.Join(c.Dir, "apiserver-certs"),
		"--tls-cert-file", c.pki.ServingCert, "--tls-private-key-file", c.pki.ServingKey,
		"--client-ca-file", c.pki.CAFile,
		"--service-account-issuer", "https://kubernetes.default.svc",
		"--service-account-key-file", c.pki.ServiceAccountPub,
		"--service-account-signing-key-file", c.pki.ServiceAccountKey,
		"--service-cluster-ip-range", "10.0.0.0/24",
		"--authorization-mode", "Node,RBAC",
		"--enable-admission-plugins", "NodeRestriction",
		"--allow-privileged=true",
		"--endpoint-reconciler-type", "none",
		"--profiling=false",
	}
	if c.Profile.Kubelets {
		cert, key, err := c.pki.Client("kube-apiserver-kubelet-client", "system:masters")
		if err != nil {
			return err
		}
		args = append(args, "--kubelet-preferred-address-types", "InternalIP,Hostname",
			"--kubelet-client-certificate", cert, "--kubelet-client-key", key,
			"--kubelet-certificate-authority", c.pki.CAFile)
	}
	args = append(args, c.gateArgs()...)
	if c.Profile.RuntimeConfig != "" {
		args = append(args, "--runtime-config", c.Profile.RuntimeConfig)
	}
	c.apiServerArgs = args
	p, err := startProcess(c.Dir, "kube-apiserver", bin.path("kube-apiserver"), args...)
	if err != nil {
		return err
	}
	c.processes = append(c.processes, p)
	cert, key, err := c.pki.Client("e2e-admin", "system:masters")
	if err != nil {
		return err
	}
	c.AdminKubeconfig = filepath.Join(c.Dir, "admin.kubeconfig")
	if err := c.writeKubeconfig(c.AdminKubeconfig, cert, key); err != nil {
		return err
	}
	if c.AdminConfig, err = clientcmd.BuildConfigFromFlags("", c.AdminKubeconfig); err != nil {
		return err
	}
	c.AdminConfig.QPS, c.AdminConfig.Burst = 200, 400
	if c.Admin, err = kubernetes.NewForConfig(c.AdminConfig); err != nil {
		return err
	}
	return c.waitForAPIServer(ctx, p)
}

func (c *Cluster) waitForAPIServer(ctx context.Context, p *process) error {
	return waitFor(p, 120*time.Second, func() error {
		body, err := c.Admin.RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		if err != nil {
			return fmt.Errorf("/readyz: %w: %s", err, body)
		}
		return nil
	})
}

// RestartAPIServer stops kube-apiserver (SIGTERM), keeps it down for `down`, and starts it
// again on the same port with the same etcd, until /readyz.
func (c *Cluster) RestartAPIServer(ctx context.Context, down time.Duration) error {
	for i, p := range c.processes {
		if p.name != "kube-apiserver" {
			continue
		}
		p.stop()
		time.Sleep(down)
		restarted, err := startProcess(c.Dir, "kube-apiserver", c.bin.path("kube-apiserver"), c.apiServerArgs...)
		if err != nil {
			return err
		}
		c.processes[i] = restarted
		return c.waitForAPIServer(ctx, restarted)
	}
	return errors.New("no kube-apiserver to restart")
}

func (c *Cluster) startComponent(bin Binaries, name string) error {
	user := "system:" + name
	cert, key, err := c.pki.Client(user)
	if err != nil {
		return err
	}
	kubeconfig := filepath.Join(c.Dir, name+".kubeconfig")
	if err := c.writeKubeconfig(kubeconfig, cert, key); err != nil {
		return err
	}
	args := []string{"--kubeconfig", kubeconfig, "--leader-elect=false", "--secure-port=0"}
	if name == "kube-controller-manager" {
		args = append(args, "--authentication-kubeconfig", kubeconfig, "--authorization-kubeconfig", kubeconfig,
			"--use-service-account-credentials=true", "--root-ca-file", c.pki.CAFile,
			"--service-account-private-key-file", c.pki.ServiceAccountKey, "--controllers=*")
	}
	// The scheduler's own API rate limit (50 requests/s, bursts of 100, by default) caps how many
	// pods a second it can bind, whatever the slices: a benchmark may lift it to see past it.
	if qps := os.Getenv("NUMADRA_E2E_SCHEDULER_QPS"); name == "kube-scheduler" && qps != "" {
		args = append(args, "--kube-api-qps", qps, "--kube-api-burst", qps)
	}
	args = append(args, c.gateArgs()...)
	p, err := startSupervised(c.Dir, name, bin.path(name), args...)
	if err != nil {
		return err
	}
	c.processes = append(c.processes, p)
	if name != "kube-controller-manager" {
		return nil
	}
	// Its controllers run once the root CA is published into every namespace.
	return waitFor(p, 90*time.Second, func() error {
		_, err := c.Admin.CoreV1().ConfigMaps("default").Get(context.Background(), "kube-root-ca.crt", metav1.GetOptions{})
		return err
	})
}

func (c *Cluster) gateArgs() []string {
	if c.Profile.FeatureGates == "" {
		return nil
	}
	return []string{"--feature-gates", c.Profile.FeatureGates}
}

// writeKubeconfig writes a kubeconfig for the API server with a client certificate.
func (c *Cluster) writeKubeconfig(path, cert, key string) error {
	config := clientcmdapi.NewConfig()
	config.Clusters["e2e"] = &clientcmdapi.Cluster{Server: c.URL, CertificateAuthority: c.pki.CAFile}
	config.AuthInfos["user"] = &clientcmdapi.AuthInfo{ClientCertificate: cert, ClientKey: key}
	config.Contexts["e2e"] = &clientcmdapi.Context{Cluster: "e2e", AuthInfo: "user"}
	config.CurrentContext = "e2e"
	return clientcmd.WriteToFile(*config, path)
}

// NodeKubeconfig writes the kubeconfig of the kubelet of `node`: a client certificate of
// system:node:<node> in system:nodes, as the Node authorizer and NodeRestriction expect.
func (c *Cluster) NodeKubeconfig(path, node string) error {
	cert, key, err := c.pki.Client("system:node:"+node, "system:nodes")
	if err != nil {
		return err
	}
	return c.writeKubeconfig(path, cert, key)
}

// KubeletServing issues the serving certificate of the kubelet of `node` (its name, its
// addresses and 127.0.0.1), which the API server checks when Profile.Kubelets.
func (c *Cluster) KubeletServing(node string, addresses ...net.IP) (certFile, keyFile string, err error) {
	return c.pki.issue("kubelet-"+node, pkix.Name{CommonName: node}, []string{node, "localhost"},
		append([]net.IP{net.ParseIP("127.0.0.1")}, addresses...), x509.ExtKeyUsageServerAuth)
}

// CAFile is the cluster's certificate authority: it signed every certificate of the cluster.
func (c *Cluster) CAFile() string { return c.pki.CAFile }

// TokenKubeconfig writes a kubeconfig that authenticates with a bearer token, as a pod's
// service account does; the CA is inlined, as tools that copy a kubeconfig expect.
func (c *Cluster) TokenKubeconfig(path, token string) error {
	ca, err := os.ReadFile(c.pki.CAFile)
	if err != nil {
		return err
	}
	config := clientcmdapi.NewConfig()
	config.Clusters["e2e"] = &clientcmdapi.Cluster{Server: c.URL, CertificateAuthorityData: ca}
	config.AuthInfos["token"] = &clientcmdapi.AuthInfo{Token: token}
	config.Contexts["e2e"] = &clientcmdapi.Context{Cluster: "e2e", AuthInfo: "token"}
	config.CurrentContext = "e2e"
	return clientcmd.WriteToFile(*config, path)
}

// freePort asks the kernel for a free TCP port on 127.0.0.1.
func freePort() int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(fmt.Sprintf("no free port on 127.0.0.1: %v", err))
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// waitFor polls ready until it succeeds, the process exits, or the timeout passes.
func waitFor(p *process, timeout time.Duration, ready func() error) error {
	deadline := time.Now().Add(timeout)
	var last error
	for time.Now().Before(deadline) {
		if p.exited() {
			return fmt.Errorf("%s exited while starting: %s", p.name, p.tail())
		}
		if last = ready(); last == nil {
			return nil
		}
		time.Sleep(200 * time.Millisecond)
	}
	return fmt.Errorf("%s not ready after %s: %v; log: %s", p.name, timeout, last, p.tail())
}
