package check

import (
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestParseConditions(t *testing.T) {
	tests := []struct {
		in   string
		want []Condition
		str  string
	}{
		{"ready", []Condition{{Keyword: KeywordReady}}, "ready"},
		{"READY", []Condition{{Keyword: KeywordReady}}, "ready"},
		{"running", []Condition{{Keyword: KeywordRunning}}, "running"},
		{"Succeeded", []Condition{{Keyword: KeywordSucceeded}}, "succeeded"},
		{"completed", []Condition{{Keyword: KeywordCompleted}}, "completed"},
		{"healthy", []Condition{{Keyword: KeywordHealthy}}, "healthy"},
		{"gone", []Condition{{Keyword: KeywordGone}}, "gone"},
		{" ready , running ", []Condition{{Keyword: KeywordReady}, {Keyword: KeywordRunning}}, "ready,running"},
		{"succeeded,completed", []Condition{{Keyword: KeywordSucceeded}, {Keyword: KeywordCompleted}}, "succeeded,completed"},
		{"condition=Ready", []Condition{{Keyword: KeywordPodCondition, Type: "Ready", Status: "True"}}, "condition=Ready"},
		{"Condition=ready=true", []Condition{{Keyword: KeywordPodCondition, Type: "Ready", Status: "True"}}, "condition=Ready"},
		{"condition=PodScheduled=false", []Condition{{Keyword: KeywordPodCondition, Type: "PodScheduled", Status: "False"}}, "condition=PodScheduled=False"},
		{"condition=Initialized=UNKNOWN", []Condition{{Keyword: KeywordPodCondition, Type: "Initialized", Status: "Unknown"}}, "condition=Initialized=Unknown"},
		{"condition=example.com/feature-1", []Condition{{Keyword: KeywordPodCondition, Type: "example.com/feature-1", Status: "True"}}, "condition=example.com/feature-1"},
		{"ready,condition=ContainersReady", []Condition{{Keyword: KeywordReady}, {Keyword: KeywordPodCondition, Type: "ContainersReady", Status: "True"}}, "ready,condition=ContainersReady"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseConditions(tt.in)
			if err != nil {
				t.Fatalf("ParseConditions(%q): %v", tt.in, err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("ParseConditions(%q) = %#v, want %#v", tt.in, got, tt.want)
			}
			if s := FormatConditions(got); s != tt.str {
				t.Errorf("FormatConditions = %q, want %q", s, tt.str)
			}
		})
	}
}

func TestParseConditionsErrors(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		{"", `invalid --until value "": want one of ready, running, succeeded, completed, healthy, gone, condition=TYPE[=STATUS]`},
		{"  ", `invalid --until value "  ": want one of`},
		{"redy", `invalid --until condition "redy": want one of ready, running, succeeded, completed, healthy, gone, condition=TYPE[=STATUS]`},
		{"ready,", `invalid --until value "ready,": empty condition in the list`},
		{",ready", `empty condition in the list`},
		{"ready,,running", `empty condition in the list`},
		{"ready,ready", `invalid --until value "ready,ready": condition "ready" given twice`},
		{"ready,READY", `condition "ready" given twice`},
		{"condition=Ready,condition=ready=False", `condition "condition=ready" given twice`},
		{"gone,ready", `invalid --until value "gone,ready": gone cannot be combined with other conditions`},
		{"ready,gone", `gone cannot be combined`},
		{"gone,gone", `gone cannot be combined`},
		{"running,succeeded", `running and succeeded can never hold at the same time`},
		{"completed,running", `completed and running can never hold at the same time`},
		{"condition", `invalid --until condition "condition": want one of`},
		{"condition=", `invalid --until condition "condition=": missing TYPE in condition=TYPE[=STATUS]`},
		{"condition==True", `missing TYPE`},
		{"condition=Ready=", `invalid --until condition "condition=Ready=": STATUS "" must be True, False or Unknown`},
		{"condition=Ready=yes", `STATUS "yes" must be True, False or Unknown`},
		{"condition=Ready=True=x", `STATUS "True=x" must be True, False or Unknown`},
		{"condition=Re ady", `bad TYPE "Re ady"`},
		{"condition=-x", `bad TYPE "-x"`},
		{"ready=True", `invalid --until condition "ready=True": want one of`},
		{"phase=Running", `invalid --until condition "phase=Running"`},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseConditions(tt.in)
			if err == nil {
				t.Fatalf("ParseConditions(%q) = %v, want error", tt.in, got)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not contain %q", err, tt.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error %q is more than one line", err)
			}
		})
	}
}

func TestSatisfiedBy(t *testing.T) {
	pending := newPod("p")
	runningNotReady := newPod("r", phase(corev1.PodRunning), cond(corev1.PodReady, corev1.ConditionFalse, "ContainersNotReady", ""))
	readyPod := newPod("ok", ready())
	succeeded := newPod("job", phase(corev1.PodSucceeded), cond(corev1.PodReady, corev1.ConditionFalse, "PodCompleted", ""))
	failed := newPod("bad", phase(corev1.PodFailed))
	unknownSched := newPod("u", cond(corev1.PodScheduled, corev1.ConditionUnknown, "", ""))
	lowerType := newPod("lc", cond("ready", corev1.ConditionTrue, "", ""))
	gate := newPod("g", phase(corev1.PodRunning), cond("example.com/feature-1", corev1.ConditionFalse, "", ""))

	tests := []struct {
		cond string
		pod  *corev1.Pod
		want bool
	}{
		{"ready", readyPod, true},
		{"ready", runningNotReady, false},
		{"ready", pending, false},
		{"ready", succeeded, false},
		{"ready", lowerType, true},
		{"running", runningNotReady, true},
		{"running", pending, false},
		{"running", succeeded, false},
		{"succeeded", succeeded, true},
		{"succeeded", failed, false},
		{"completed", succeeded, true},
		{"completed", failed, true},
		{"completed", readyPod, false},
		{"healthy", readyPod, true},
		{"healthy", succeeded, true},
		{"healthy", runningNotReady, false},
		{"healthy", failed, false},
		{"gone", readyPod, false},
		{"gone", pending, false},
		{"condition=Ready", readyPod, true},
		{"condition=Ready=False", runningNotReady, true},
		{"condition=Ready=False", readyPod, false},
		{"condition=Ready=Unknown", pending, false},
		{"condition=PodScheduled=Unknown", unknownSched, true},
		{"condition=example.com/feature-1=False", gate, true},
		{"condition=example.com/feature-1", gate, false},
	}
	for _, tt := range tests {
		t.Run(tt.cond+"/"+tt.pod.Name, func(t *testing.T) {
			c := mustConditions(tt.cond)[0]
			if got := c.SatisfiedBy(tt.pod); got != tt.want {
				t.Errorf("%s.SatisfiedBy(%s) = %v, want %v", c, tt.pod.Name, got, tt.want)
			}
		})
	}
}

// A condition of an older generation of the pod satisfies nothing, not
// even a wait for its own status, and its explanation says so.
func TestConditionOfAnOlderGeneration(t *testing.T) {
	resized := newPod("resized", phase(corev1.PodRunning), ready(), cond(corev1.PodReadyToStartContainers, corev1.ConditionTrue, "", ""))
	resized.Generation = 2
	for i := range resized.Status.Conditions {
		resized.Status.Conditions[i].ObservedGeneration = 1
	}
	for _, s := range []string{"ready", "healthy", "condition=Ready", "condition=PodReadyToStartContainers=True"} {
		if c := mustConditions(s)[0]; c.SatisfiedBy(resized) {
			t.Errorf("%s is satisfied by conditions of generation 1 of a pod of generation 2", c)
		}
	}
	u := explainCondition(resized, mustConditions("ready")[0])
	if want := "Ready=True of generation 1, not the current 2"; u.Got != want {
		t.Errorf("explanation got %q, want %q", u.Got, want)
	}
	resized.Status.Conditions[0].ObservedGeneration = 2
	if c := mustConditions("ready")[0]; !c.SatisfiedBy(resized) {
		t.Errorf("%s is not satisfied by Ready=True of the current generation", c)
	}
}
