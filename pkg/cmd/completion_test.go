package cmd

import (
	"reflect"
	"testing"

	"github.com/spf13/cobra"
)

func TestCompleteList(t *testing.T) {
	complete := completeList([]string{"ready", "running", "healthy", "gone"})
	cases := []struct {
		typed string
		want  []string
	}{
		{"", []string{"ready", "running", "healthy", "gone"}},
		{"r", []string{"ready", "running"}},
		{"ready,h", []string{"ready,healthy"}},
		{"ready,", []string{"ready,running", "ready,healthy", "ready,gone"}},
		{"ready,gone,", []string{"ready,gone,running", "ready,gone,healthy"}},
		{"x", nil},
	}
	for _, c := range cases {
		got, directive := complete(&cobra.Command{}, nil, c.typed)
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%q: got %q, want %q", c.typed, got, c.want)
		}
		if want := cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveNoSpace; directive != want {
			t.Errorf("%q: directive %d, want %d", c.typed, directive, want)
		}
	}
}
