package action

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"
)

// actionFile is the part of action.yml the runner reads.
type actionFile struct {
	Inputs map[string]struct {
		Default string `json:"default"`
	} `json:"inputs"`
	Outputs map[string]struct {
		Value string `json:"value"`
	} `json:"outputs"`
	Runs struct {
		Using string `json:"using"`
		Steps []step `json:"steps"`
	} `json:"runs"`
}

type step struct {
	ID    string            `json:"id"`
	Name  string            `json:"name"`
	If    string            `json:"if"`
	Shell string            `json:"shell"`
	Run   string            `json:"run"`
	Uses  string            `json:"uses"`
	Env   map[string]string `json:"env"`
	With  map[string]string `json:"with"`
}

func readAction(t *testing.T) actionFile {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot(t), "action.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var a actionFile
	if err := yaml.Unmarshal(data, &a); err != nil {
		t.Fatalf("action.yml: %v", err)
	}
	if a.Runs.Using != "composite" || len(a.Runs.Steps) == 0 {
		t.Fatalf("action.yml: want a composite action with steps, got %q with %d steps", a.Runs.Using, len(a.Runs.Steps))
	}
	return a
}

// runner plays the GitHub Actions runner for one job on Linux/X64.
type runner struct {
	actionRef string // github.action_ref: the ref in `uses:`
	temp      string // RUNNER_TEMP
	toolCache string // RUNNER_TOOL_CACHE, kept between runs as on a self-hosted runner
	path      string // PATH before the action adds to it
	env       []string
}

// stepRun is what one step did.
type stepRun struct {
	name    string
	skipped bool
	uses    bool
	code    int
	output  string // stdout and stderr, as the runner's log has them
}

// actionRun is one run of the action.
type actionRun struct {
	steps   []stepRun
	outputs map[string]string
	added   []string // folders the action put on PATH
	failed  bool
	summary string // GITHUB_STEP_SUMMARY
}

// log is every step's output, as the job's log shows it.
func (a actionRun) log() string {
	var b strings.Builder
	for _, s := range a.steps {
		switch {
		case s.uses:
			fmt.Fprintf(&b, "=== %s (uses: not run here)\n", s.name)
		case s.skipped:
			fmt.Fprintf(&b, "=== %s: skipped\n", s.name)
		default:
			fmt.Fprintf(&b, "=== %s: exit %d\n%s", s.name, s.code, s.output)
		}
	}
	return b.String()
}

func (a actionRun) step(t *testing.T, name string) stepRun {
	t.Helper()
	for _, s := range a.steps {
		if s.name == name {
			return s
		}
	}
	t.Fatalf("no step %q ran:\n%s", name, a.log())
	return stepRun{}
}

var expression = regexp.MustCompile(`\$\{\{\s*(.*?)\s*\}\}`)

// run runs the action's steps with the given inputs (the rest take their
// defaults), as the runner runs a composite action's steps: each after the
// previous one succeeded, `if:` conditions evaluated, outputs and PATH
// additions read from the files the step wrote.
func (r runner) run(t *testing.T, a actionFile, with map[string]string) actionRun {
	t.Helper()
	inputs := map[string]string{}
	for name, in := range a.Inputs {
		inputs[name] = in.Default
	}
	for name, v := range with {
		if _, ok := a.Inputs[name]; !ok {
			t.Fatalf("action.yml has no input %q", name)
		}
		inputs[name] = v
	}
	steps := map[string]map[string]string{}
	ctx := func(expr string) string {
		switch {
		case strings.HasPrefix(expr, "inputs."):
			v, ok := inputs[strings.TrimPrefix(expr, "inputs.")]
			if !ok {
				t.Fatalf("action.yml reads an undeclared input: %s", expr)
			}
			return v
		case strings.HasPrefix(expr, "steps."):
			parts := strings.SplitN(expr, ".", 4)
			if len(parts) != 4 || parts[2] != "outputs" {
				t.Fatalf("expression %q not understood by this runner", expr)
			}
			return steps[parts[1]][parts[3]]
		}
		v, ok := map[string]string{
			"github.action_ref":  r.actionRef,
			"github.action_path": repoRoot(t),
			"runner.os":          "Linux",
			"runner.arch":        "X64",
			"runner.temp":        r.temp,
			"runner.tool_cache":  r.toolCache,
		}[expr]
		if !ok {
			t.Fatalf("expression %q not understood by this runner", expr)
		}
		return v
	}
	eval := func(s string) string {
		return expression.ReplaceAllStringFunc(s, func(m string) string {
			return ctx(expression.FindStringSubmatch(m)[1])
		})
	}

	run := actionRun{outputs: map[string]string{}}
	summary := filepath.Join(r.temp, "step-summary.md")
	var pathAdded []string
	for i, s := range a.Runs.Steps {
		name := s.Name
		if name == "" {
			name = s.ID
		}
		if run.failed || !condition(t, s.If, ctx) {
			run.steps = append(run.steps, stepRun{name: name, skipped: true})
			continue
		}
		if s.Uses != "" {
			// actions/cache: a miss, so the install step is what restores.
			run.steps = append(run.steps, stepRun{name: name, uses: true})
			continue
		}
		if s.Shell != "bash" {
			t.Fatalf("step %q: shell %q, this runner runs bash only", name, s.Shell)
		}
		script := filepath.Join(r.temp, fmt.Sprintf("step-%d.sh", i))
		output := filepath.Join(r.temp, fmt.Sprintf("output-%d", i))
		pathFile := filepath.Join(r.temp, fmt.Sprintf("path-%d", i))
		for _, f := range []string{script, output, pathFile} {
			content := ""
			if f == script {
				content = eval(s.Run)
			}
			if err := os.WriteFile(f, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		vars := append([]string{}, r.env...)
		vars = append(vars,
			"PATH="+strings.Join(append(reversed(pathAdded), r.path), string(os.PathListSeparator)),
			"HOME="+r.temp, "RUNNER_OS=Linux", "RUNNER_ARCH=X64", "RUNNER_TEMP="+r.temp,
			"RUNNER_TOOL_CACHE="+r.toolCache, "GITHUB_ACTIONS=true", "CI=true",
			"GITHUB_ACTION_PATH="+repoRoot(t), "GITHUB_OUTPUT="+output, "GITHUB_PATH="+pathFile,
			"GITHUB_STEP_SUMMARY="+summary)
		for k, v := range s.Env {
			vars = append(vars, k+"="+eval(v))
		}
		sr := runBash(t, script, vars)
		sr.name = name
		run.steps = append(run.steps, sr)
		if s.ID != "" {
			steps[s.ID] = readOutputs(t, output)
		}
		var added []string
		for _, l := range readLines(t, pathFile) {
			if strings.TrimSpace(l) != "" {
				added = append(added, l)
			}
		}
		pathAdded = append(pathAdded, added...)
		run.added = append(run.added, added...)
		run.failed = sr.code != 0
	}
	for name, o := range a.Outputs {
		run.outputs[name] = eval(o.Value)
	}
	if data, err := os.ReadFile(summary); err == nil {
		run.summary = string(data)
	}
	return run
}

// runBash runs a step as the runner runs `shell: bash`.
func runBash(t *testing.T, script string, vars []string) stepRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "--noprofile", "--norc", "-eo", "pipefail", script)
	cmd.Env = vars
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("step %s did not end within 3m:\n%s", script, out.String())
	}
	code := 0
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			t.Fatalf("run %s: %v", script, err)
		}
		code = ee.ExitCode()
	}
	return stepRun{code: code, output: out.String()}
}

var comparison = regexp.MustCompile(`^([A-Za-z0-9_.-]+) (==|!=) '([^']*)'$`)

// condition evaluates the `if:` forms action.yml uses; any other form
// fails the test rather than being guessed.
func condition(t *testing.T, cond string, ctx func(string) string) bool {
	t.Helper()
	cond = strings.TrimSpace(cond)
	if cond == "" {
		return true
	}
	m := comparison.FindStringSubmatch(cond)
	if m == nil {
		t.Fatalf("if: %q not understood by this runner", cond)
	}
	return (ctx(m[1]) == m[3]) == (m[2] == "==")
}

// readOutputs reads a GITHUB_OUTPUT file: NAME=VALUE lines and
// NAME<<DELIMITER blocks.
func readOutputs(t *testing.T, file string) map[string]string {
	t.Helper()
	out := map[string]string{}
	lines := readLines(t, file)
	for i := 0; i < len(lines); i++ {
		if name, delim, ok := strings.Cut(lines[i], "<<"); ok && !strings.Contains(name, "=") {
			var value []string
			for i++; i < len(lines) && lines[i] != delim; i++ {
				value = append(value, lines[i])
			}
			out[name] = strings.Join(value, "\n")
			continue
		}
		if lines[i] == "" {
			continue
		}
		name, value, ok := strings.Cut(lines[i], "=")
		if !ok {
			t.Fatalf("%s: line %q is neither NAME=VALUE nor NAME<<DELIMITER", file, lines[i])
		}
		out[name] = value
	}
	return out
}

func readLines(t *testing.T, file string) []string {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return lines
}

// reversed: the runner puts the newest PATH addition first.
func reversed(s []string) []string {
	out := make([]string, len(s))
	for i, v := range s {
		out[len(s)-1-i] = v
	}
	return out
}

func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "action.yml")); err != nil {
		t.Fatalf("repository root with action.yml not found at %s: %v", root, err)
	}
	return root
}
