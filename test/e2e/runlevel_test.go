package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	pipelinev1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kiln-dev/kiln/pkg/trigger"
)

// dashboardLabels is how many labels the Tekton Dashboard's run header
// shows before "+N" (LabelsWithOverflow's maxVisibleLabels).
const dashboardLabels = 4

// change is one triggering change the scenario makes: the time it made it
// and the pools it concerns (none: every pool).
type change struct {
	at    time.Time
	what  string
	pools []string
}

// noteChange records a triggering change just before the scenario makes
// it, for the table's TO_ROLLOUT column.
func (c *cluster) noteChange(what string, pools ...string) {
	c.changes = append(c.changes, change{at: time.Now(), what: what, pools: pools})
}

// changeOf is the latest recorded change before r was made that concerns
// r's pool.
func (c *cluster) changeOf(r *pipelinev1.PipelineRun) (change, bool) {
	made := r.CreationTimestamp.Time.Add(time.Second) // creationTimestamp is cut to the second
	pool := r.Labels[trigger.LabelPool]
	var found change
	ok := false
	for _, ch := range c.changes {
		if ch.at.After(made) || (len(ch.pools) > 0 && !slices.Contains(ch.pools, pool)) {
			continue
		}
		if !ok || ch.at.After(found.at) {
			found, ok = ch, true
		}
	}
	return found, ok
}

// toRollout is the time from r's triggering change to its rollout task
// starting, "-" when it has none (a skipped or failed earlier stage).
func (c *cluster) toRollout(ctx context.Context, r *pipelinev1.PipelineRun) string {
	ch, ok := c.changeOf(r)
	if !ok {
		return "-"
	}
	for _, ref := range r.Status.ChildReferences {
		if ref.PipelineTaskName != "rollout" {
			continue
		}
		tr := &pipelinev1.TaskRun{}
		if err := c.c.Get(ctx, client.ObjectKey{Namespace: r.Namespace, Name: ref.Name}, tr); err != nil || tr.Status.StartTime == nil {
			return "-"
		}
		return tr.Status.StartTime.Sub(ch.at).Round(time.Second).String()
	}
	return "-"
}

// assertRunLevel checks what an operator sees of r without opening it:
// the name shows pool and trigger (the run lists show only names), the
// Dashboard's header shows pool and trigger among its first labels in the
// apiserver's order, the changes param names what changed, and the
// pipeline results carry the essentials.
func (c *cluster) assertRunLevel(ctx context.Context, r *pipelinev1.PipelineRun, changes string) {
	c.t.Helper()
	pool, trig := r.Labels[trigger.LabelPool], r.Labels[trigger.LabelTrigger]
	if want := "kiln-" + pool + "-" + trig + "-"; !strings.HasPrefix(r.Name, want) {
		c.t.Errorf("run %s: name does not start with %s", r.Name, want)
	}
	keys := c.labelKeysInOrder(ctx, r)
	shown := keys[:min(dashboardLabels, len(keys))]
	if !slices.Contains(shown, trigger.LabelPool) || !slices.Contains(shown, trigger.LabelTrigger) {
		c.t.Errorf("run %s: the Dashboard's header shows labels %v (of %v), without pool and trigger", r.Name, shown, keys)
	}
	c.t.Logf("run %s: Dashboard header labels %v", r.Name, shown)
	if got := param(r, "changes"); !strings.HasPrefix(got, changes) || r.Annotations[trigger.AnnotChanges] != got {
		c.t.Errorf("run %s: changes param %q (annotation %q), want %q…", r.Name, got, r.Annotations[trigger.AnnotChanges], changes)
	}
	results := runResults(r)
	for _, name := range []string{"IMAGE_URL", "IMAGE_DIGEST", "RENDERED_NAME", "ROLLOUT_STATE"} {
		if results[name] == "" {
			c.t.Errorf("run %s: pipeline result %s is empty or missing (results %v)", r.Name, name, results)
		}
	}
	if results["FAILED_STAGE"] != "" || results["FAILURE"] != "" {
		c.t.Errorf("run %s succeeded but FAILED_STAGE=%q FAILURE=%q", r.Name, results["FAILED_STAGE"], results["FAILURE"])
	}
}

func runResults(r *pipelinev1.PipelineRun) map[string]string {
	out := map[string]string{}
	for _, res := range r.Status.Results {
		out[res.Name] = res.Value.StringVal
	}
	return out
}

func param(r *pipelinev1.PipelineRun, name string) string {
	for _, p := range r.Spec.Params {
		if p.Name == name {
			return p.Value.StringVal
		}
	}
	return ""
}

// labelKeysInOrder reads r's label keys in the order the apiserver sends
// them, which is the order the Dashboard shows them in; a decoded map
// would lose it.
func (c *cluster) labelKeysInOrder(ctx context.Context, r *pipelinev1.PipelineRun) []string {
	c.t.Helper()
	hc, err := rest.HTTPClientFor(c.kube.Config)
	if err != nil {
		c.t.Fatal(err)
	}
	url := fmt.Sprintf("%s/apis/tekton.dev/v1/namespaces/%s/pipelineruns/%s", strings.TrimSuffix(c.kube.Config.Host, "/"), r.Namespace, r.Name)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		c.t.Fatal(err)
	}
	resp, err := hc.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		c.t.Fatalf("GET %s: %d %v", url, resp.StatusCode, err)
	}
	var obj struct {
		Metadata struct {
			Labels json.RawMessage `json:"labels"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(body, &obj); err != nil {
		c.t.Fatal(err)
	}
	dec := json.NewDecoder(strings.NewReader(string(obj.Metadata.Labels)))
	var keys []string
	if _, err := dec.Token(); err != nil { // {
		c.t.Fatalf("run %s labels: %v", r.Name, err)
	}
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			c.t.Fatal(err)
		}
		keys = append(keys, k.(string))
		if _, err := dec.Token(); err != nil { // the value
			c.t.Fatal(err)
		}
	}
	return keys
}
