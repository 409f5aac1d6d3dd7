package source

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
)

// A streaming list that the server answers with a stream it cannot read
// (a proxy's error page) has not succeeded: the reporter hears of a
// failed list, never of a list that worked.
func TestStreamedListThatCannotBeReadIsNoSuccess(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		_, _ = w.Write([]byte("<html><body>502 Bad Gateway</body></html>"))
	}))
	defer srv.Close()
	client, err := rest.RESTClientFor(&rest.Config{Host: srv.URL, APIPath: "/api", ContentConfig: rest.ContentConfig{
		GroupVersion: &corev1.SchemeGroupVersion, NegotiatedSerializer: scheme.Codecs.WithoutConversion()}})
	if err != nil {
		t.Fatal(err)
	}
	h := &heard{}
	src := Objects(nil, nil, client, client, Filter{}, h)
	w, err := src.Watch(context.Background(), metav1.ListOptions{SendInitialEvents: ptr.To(true), AllowWatchBookmarks: true}, Call{})
	if err != nil {
		t.Fatal(err)
	}
	for range w.ResultChan() { // until the stream breaks
	}
	if got := fmt.Sprint(h.verbs); got != "[list true]" {
		t.Errorf("reported %s, want [list true]: one failed list", got)
	}
}
