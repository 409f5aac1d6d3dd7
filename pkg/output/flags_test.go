package output

import (
	"github.com/spf13/cobra"
	"k8s.io/kubectl/pkg/cmd/get"
)

func newFlagCommand(pf *get.PrintFlags) *cobra.Command {
	c := &cobra.Command{Use: "test"}
	pf.AddFlags(c)
	return c
}
