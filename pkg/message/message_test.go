package message

import (
	"fmt"
	"testing"
)

func TestKindsTable(t *testing.T) {
	var names []string
	for _, k := range Kinds() {
		names = append(names, k.String())
	}
	if got := fmt.Sprint(names); got != "[SYNC ADD UPDATE GONE DIAGNOSIS WARNING NORMAL]" {
		t.Errorf("kinds %s", got)
	}
	var pods []string
	for _, k := range Kinds() {
		if k.PodState() {
			pods = append(pods, k.String())
		}
	}
	if got := fmt.Sprint(pods); got != "[SYNC ADD UPDATE GONE]" {
		t.Errorf("pod state kinds %s", got)
	}
}
