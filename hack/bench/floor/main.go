// Command floor is the least work a client-go program can do to see every
// pod: a paginated protobuf LIST (500 per page, as kubectl and the reflector
// ask) decoded into typed Pods and thrown away. hack/bench runs it as its
// own small process, so that its peak RSS is its own and not the bench's.
//
//	floor -kubeconfig FILE
//
// It prints the number of pods on stderr.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "floor: %v\n", err)
		os.Exit(1)
	}
}

func run() error {
	kubeconfig := flag.String("kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig of the cluster")
	flag.Parse()
	if *kubeconfig == "" {
		return errors.New("-kubeconfig or $KUBECONFIG is required")
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		return fmt.Errorf("load kubeconfig: %w", err)
	}
	cfg.ContentType = "application/vnd.kubernetes.protobuf"
	cfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	cfg.QPS, cfg.Burst = -1, 0
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("clientset: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	n := 0
	opts := metav1.ListOptions{Limit: 500}
	for {
		list, err := cs.CoreV1().Pods("").List(ctx, opts)
		if err != nil {
			return fmt.Errorf("list pods: %w", err)
		}
		n += len(list.Items)
		if list.Continue == "" {
			break
		}
		opts.Continue = list.Continue
	}
	fmt.Fprintf(os.Stderr, "pods: %d\n", n)
	return nil
}
