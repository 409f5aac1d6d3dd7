package podsync

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/kubectl-podsync/kubectl-podsync/pkg/message"
	"github.com/kubectl-podsync/kubectl-podsync/pkg/source/wire"
)

func listRow(name string, uid types.UID, rv string) *wire.PodRow {
	return wire.RowOf(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name, UID: uid, ResourceVersion: rv}})
}

// says is a message list as TYPE name@rv words.
func says(msgs []message.Message) string {
	var w []string
	for _, m := range msgs {
		rv := ""
		if m.Row != nil {
			rv = "@" + m.Row.Meta().ResourceVersion
		}
		w = append(w, fmt.Sprintf("%s %s%s", m.Type, m.Key.Name, rv))
	}
	return strings.Join(w, ", ")
}

func TestInitialListHolds(t *testing.T) {
	sync, update, news := message.Message{Type: message.Sync}, message.Message{Type: message.Update}, message.Message{Type: message.Warning}
	for _, tc := range []struct {
		list initialList
		want string // sync, update, news: held or not
	}{
		{initialList{}, "--"},
		{initialList{sortBy: "{.metadata.name}"}, "y-y"},
		{initialList{sortBy: "{.metadata.name}", watchOnly: true}, "---"},
		{initialList{sortBy: "{.metadata.name}", several: true, watchOnly: true}, "yyy"},
		{initialList{sortBy: "{.metadata.name}", several: true, done: true}, "---"},
	} {
		got := ""
		for _, m := range []message.Message{sync, update, news} {
			if tc.list.holds(m) {
				got += "y"
			} else {
				got += "-"
			}
		}
		if want := tc.want + strings.Repeat("-", 3-len(tc.want)); got != want {
			t.Errorf("%+v holds %s, want %s", tc.list, got, want)
		}
	}
}

func TestInitialListTakeHeldSortsTheSyncsFirst(t *testing.T) {
	l := initialList{sortBy: "{.metadata.name}"}
	l.held = []message.Message{
		{Type: message.Sync, Key: cache.ObjectName{Namespace: "shop", Name: "web-b"}, Row: listRow("web-b", "b", "1")},
		{Type: message.Warning, Key: cache.ObjectName{Namespace: "shop", Name: "web-b"}},
		{Type: message.Sync, Key: cache.ObjectName{Namespace: "shop", Name: "web-a"}, Row: listRow("web-a", "a", "2")},
	}
	held, err := l.takeHeld()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := says(held), "SYNC web-a@2, SYNC web-b@1, WARNING web-b"; got != want {
		t.Errorf("held %s, want %s", got, want)
	}
	if again, _ := l.takeHeld(); len(again) != 0 || l.held != nil {
		t.Errorf("taken twice: %s", says(again))
	}
	l = initialList{sortBy: "{.status.nope["}
	l.held = []message.Message{{Type: message.Sync, Row: listRow("web-a", "a", "1")}, {Type: message.Sync, Row: listRow("web-b", "b", "2")}}
	if _, err := l.takeHeld(); err == nil {
		t.Error("a --sort-by that does not parse sorts")
	}
}

// A pod printed from a page is not printed again for its SYNC; what
// changed after the page comes as an UPDATE, a new pod under its name
// after the GONE of the old one, and a pod the informer never listed
// is GONE once the list is complete.
func TestInitialListStreamsPagesOnce(t *testing.T) {
	key := func(n string) cache.ObjectName { return cache.ObjectName{Namespace: "shop", Name: n} }
	l := initialList{streamed: map[cache.ObjectName]*wire.PodRow{}}
	for _, step := range []struct {
		msgs []message.Message
		want string
	}{
		{l.restream(key("web-a"), listRow("web-a", "a", "1")), "SYNC web-a@1"},
		{l.restream(key("web-a"), listRow("web-a", "a", "1")), ""},
		{l.restream(key("web-a"), listRow("web-a", "a", "2")), "UPDATE web-a@2"},
		{l.restream(key("web-b"), listRow("web-b", "b", "3")), "SYNC web-b@3"},
		{l.restream(key("web-b"), listRow("web-b", "b2", "4")), "GONE web-b@3, SYNC web-b@4"},
		{l.restream(key("web-c"), listRow("web-c", "c", "5")), "SYNC web-c@5"},
		{l.unstream([]message.Message{{Type: message.Sync, Key: key("web-a"), Row: listRow("web-a", "a", "2")}}), ""},
		{l.unstream([]message.Message{{Type: message.Sync, Key: key("web-b"), Row: listRow("web-b", "b2", "6")}}), "UPDATE web-b@6"},
		{l.unstream([]message.Message{{Type: message.Sync, Key: key("web-b"), Row: listRow("web-b", "b2", "7")}}), "SYNC web-b@7"},
		{l.unstream([]message.Message{{Type: message.Warning, Key: key("web-c")}}), "WARNING web-c"},
		{l.unlisted(), "GONE web-c@5"},
	} {
		if got := says(step.msgs); got != step.want {
			t.Errorf("got %q, want %q", got, step.want)
		}
	}
	if l.streamed != nil {
		t.Error("the pages are still kept once the list is complete")
	}
	if got := says(l.unstream([]message.Message{{Type: message.Sync, Key: key("web-d"), Row: listRow("web-d", "d", "8")}})); got != "SYNC web-d@8" {
		t.Errorf("after the list: %q", got)
	}
}
