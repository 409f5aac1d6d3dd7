package message

import (
	"fmt"
	"testing"
)

func TestTypesTable(t *testing.T) {
	var names []string
	for _, k := range Types() {
		names = append(names, k.String())
	}
	if got := fmt.Sprint(names); got != "[SYNC ADD UPDATE GONE DIAGNOSIS WARNING NORMAL]" {
		t.Errorf("types %s", got)
	}
	var pods []string
	for _, k := range Types() {
		if k.PodState() {
			pods = append(pods, k.String())
		}
	}
	if got := fmt.Sprint(pods); got != "[SYNC ADD UPDATE GONE]" {
		t.Errorf("pod state types %s", got)
	}
}
