package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
)

// The byte floors count the pods and find the continue token of the
// answers the API server writes: here, of the same objects encoded as the
// server encodes them.
func TestReadPodsPage(t *testing.T) {
	list := &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "42", Continue: "next-page"}}
	for _, name := range []string{"a", "b", "c"} {
		list.Items = append(list.Items, corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns",
			Labels: map[string]string{"app": strings.Repeat("x", 300)}}})
	}
	info, ok := runtime.SerializerInfoForMediaType(scheme.Codecs.SupportedMediaTypes(), runtime.ContentTypeProtobuf)
	if !ok {
		t.Fatal("no protobuf serializer")
	}
	var body bytes.Buffer
	if err := scheme.Codecs.EncoderForVersion(info.Serializer, corev1.SchemeGroupVersion).Encode(list, &body); err != nil {
		t.Fatal(err)
	}
	pods, next, err := readPodsPage(bufio.NewReader(&body))
	if err != nil || pods != 3 || next != "next-page" {
		t.Fatalf("got %d pods, continue %q, %v; want 3, next-page", pods, next, err)
	}
}

func TestReadTablePage(t *testing.T) {
	table := metav1.Table{TypeMeta: metav1.TypeMeta{Kind: "Table", APIVersion: "meta.k8s.io/v1"},
		ListMeta:          metav1.ListMeta{ResourceVersion: "42", Continue: "after"},
		ColumnDefinitions: []metav1.TableColumnDefinition{{Name: "Name", Type: "string"}}}
	for _, name := range []string{"a", `"cells":`, "c"} {
		table.Rows = append(table.Rows, metav1.TableRow{Cells: []any{name}})
	}
	raw, err := json.Marshal(table)
	if err != nil {
		t.Fatal(err)
	}
	// Reads of one byte put every boundary inside a row's start.
	pods, next, err := readTablePage(bufio.NewReaderSize(&oneByte{raw}, 16))
	if err != nil || pods != 3 || next != "after" {
		t.Fatalf("got %d rows, continue %q, %v; want 3, after", pods, next, err)
	}
}

type oneByte struct{ b []byte }

func (o *oneByte) Read(p []byte) (int, error) {
	if len(o.b) == 0 {
		return 0, io.EOF
	}
	p[0], o.b = o.b[0], o.b[1:]
	return 1, nil
}
