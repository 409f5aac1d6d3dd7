package localcluster

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"syscall"
	"testing"
	"time"
)

// zombieLeaderEnv makes the test binary the helper of
// TestAProcessWhoseFirstThreadEndedFirstIsStillThere.
const zombieLeaderEnv = "PODSYNC_TEST_ZOMBIE_LEADER"

func init() {
	if os.Getenv(zombieLeaderEnv) != "" {
		// Locked in init, main runs on the first thread, which
		// zombieLeader ends.
		runtime.LockOSThread()
	}
}

func TestMain(m *testing.M) {
	if os.Getenv(zombieLeaderEnv) != "" {
		zombieLeader()
	}
	m.Run()
}

// zombieLeader listens on a port, says which, and ends its first thread
// only, as a killed Go program's first thread may end before the others:
// the process goes on, with the port, until it is killed.
func zombieLeader() {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	go func() {
		runtime.LockOSThread()
		for {
			conn, err := l.Accept()
			if err == nil {
				_ = conn.Close()
			}
		}
	}()
	fmt.Println(l.Addr().String())
	_, _, _ = syscall.RawSyscall(syscall.SYS_EXIT, 0, 0, 0)
}

// A process whose first thread is a zombie while others still run holds
// its files, its listening sockets among them: Restart must wait for it,
// or the server it starts again cannot bind its port.
func TestAProcessWhoseFirstThreadEndedFirstIsStillThere(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), zombieLeaderEnv+"=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	addr, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("the helper said nothing: %v", err)
	}
	addr = addr[:len(addr)-1]
	pid := cmd.Process.Pid
	deadline := time.Now().Add(10 * time.Second)
	for {
		f, err := procStat(pid)
		if err == nil && string(f[0]) == "Z" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the helper's first thread did not end: %s", f)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if l, err := net.Listen("tcp", addr); err == nil {
		_ = l.Close()
		t.Fatalf("%s could be bound again: the helper does not hold it", addr)
	}
	if !isProcess(pid, processStartTime(pid)) {
		t.Errorf("a process with a zombie first thread and a live one, holding %s, is said to be gone", addr)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if isProcess(pid, 0) {
		t.Errorf("the helper, killed and reaped, is said to be there")
	}
}
