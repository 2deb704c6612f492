/* SPDX-License-Identifier: MIT */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "alloc.h"
#include "fsutil.h"
#include "proc.h"

int cvm_proc_read(const char *path, size_t max, char **buf, size_t *len)
{
	size_t n = 0, cap = 4096, size = cap + 1;	/* size: b's bytes, the NUL's included */
	char *b = malloc(size);
	int fd, r = 0;

	*buf = NULL;
	*len = 0;
	if (!b)
		return -ENOMEM;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		r = -errno;
		free(b);
		return r;
	}
	for (;;) {
		ssize_t k;
		if (n == cap) {
			if (cap >= max)
				break;
			r = CVM_GROW(b, cap * 2 + 1, size);
			if (r < 0)
				break;
			cap *= 2;
		}
		k = read(fd, b + n, cap - n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0) {
			r = -errno;
			break;
		}
		if (k == 0)
			break;
		n += (size_t)k;
	}
	close(fd);
	if (r < 0) {
		free(b);
		return r;
	}
	b[n] = '\0';
	*buf = b;
	*len = n;
	return 0;
}

/* SLURM_JOB_ID from pid's environment (at most 64 KiB read; digits only) into job, or "". */
static void slurm_job(pid_t pid, char *job, size_t len)
{
	static const char key[] = "SLURM_JOB_ID=";
	char path[64], *env = NULL;
	size_t n = 0;

	job[0] = '\0';
	snprintf(path, sizeof(path), "/proc/%ld/environ", (long)pid);
	if (cvm_proc_read(path, 1 << 16, &env, &n) < 0)
		return;
	for (size_t i = 0; i < n; i += strlen(env + i) + 1) {
		const char *v = env + i + sizeof(key) - 1;
		if (strncmp(env + i, key, sizeof(key) - 1))
			continue;
		if (*v && strspn(v, "0123456789") == strlen(v) && strlen(v) < len)
			snprintf(job, len, "%s", v);
		break;
	}
	free(env);
}

static int maps_file(pid_t pid, const char *dir, char *file, size_t len)
{
	char path[64], line[4096];
	size_t dl = strlen(dir);
	FILE *f;
	int hit = 0;

	snprintf(path, sizeof(path), "/proc/%ld/maps", (long)pid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	while (!hit && fgets(line, sizeof(line), f)) {
		/* "addr perms offset dev inode   path": the path starts at the first '/'. */
		char *p = strchr(line, '/');
		if (!p || strncmp(p, dir, dl) || p[dl] != '/')
			continue;
		p[strcspn(p, "\n")] = '\0';
		snprintf(file, len, "%s", p);
		hit = 1;
	}
	fclose(f);
	return hit;
}

int cvm_proc_users(const char *dir, struct cvm_proc_user **out, size_t *n)
{
	struct cvm_proc_user *v = NULL, u;
	size_t cnt = 0, cap = 0;
	struct dirent *de;
	DIR *d;
	int r;

	*out = NULL;
	*n = 0;
	d = opendir("/proc");
	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		char path[64];
		FILE *f;
		if (!isdigit((unsigned char)de->d_name[0]))
			continue;
		memset(&u, 0, sizeof(u));
		u.pid = (pid_t)strtol(de->d_name, NULL, 10);
		if (u.pid == getpid() || !maps_file(u.pid, dir, u.file, sizeof(u.file)))
			continue;
		snprintf(path, sizeof(path), "/proc/%ld/comm", (long)u.pid);
		f = fopen(path, "re");
		if (f) {
			if (fgets(u.comm, sizeof(u.comm), f))
				u.comm[strcspn(u.comm, "\n")] = '\0';
			fclose(f);
		}
		slurm_job(u.pid, u.job, sizeof(u.job));
		r = CVM_GROW(v, cnt + 1, cap);
		if (r < 0) {
			free(v);
			closedir(d);
			return r;
		}
		v[cnt++] = u;
	}
	closedir(d);
	*out = v;
	*n = cnt;
	return 0;
}

static void kill_group(pid_t pid)
{
	int status;

	/* The child leads its own group: a wrapper script's children go too. */
	kill(-pid, SIGKILL);
	kill(pid, SIGKILL);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
}

extern char **environ;

/*
 * The child's environment, made before the fork (after it, in a parent with
 * threads, only async-signal-safe calls may run: no malloc, no setenv):
 * ours, with LD_LIBRARY_PATH replaced by ld_path when it is not NULL.
 * *var is the one string made (caller frees it and the array).
 */
static char **child_env(const char *ld_path, char **var)
{
	size_t n = 0, k = 0;
	char **env;

	*var = NULL;
	while (environ && environ[n])
		n++;
	env = calloc(n + 2, sizeof(*env));
	if (!env)
		return NULL;
	if (ld_path) {
		size_t l = strlen(ld_path) + sizeof("LD_LIBRARY_PATH=");

		*var = malloc(l);
		if (!*var) {
			free(env);
			return NULL;
		}
		snprintf(*var, l, "LD_LIBRARY_PATH=%s", ld_path);
		env[k++] = *var;
	}
	for (size_t i = 0; i < n; i++)
		if (!ld_path || strncmp(environ[i], "LD_LIBRARY_PATH=", 16))
			env[k++] = environ[i];
	return env;
}

int cvm_proc_capture(char *const argv[], const char *ld_path, bool keep_stderr, long timeout_ms,
		     char *out, size_t len, int *status)
{
	char **env = NULL, *var = NULL;
	long long deadline = cvm_now_ms() + timeout_ms;
	char sink[4096];
	size_t n = 0;
	int pfd[2] = { -1, -1 }, r = 0;
	pid_t pid = -1;

	out[0] = '\0';
	env = child_env(ld_path, &var);
	if (!env)
		return -ENOMEM;
	if (pipe2(pfd, O_CLOEXEC) < 0) {
		r = -errno;
		goto out;
	}
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		r = -errno;
		goto out;
	}
	if (pid == 0) {
		int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);

		setpgid(0, 0);
		if (devnull >= 0) {
			dup2(devnull, STDIN_FILENO);
			if (!keep_stderr)
				dup2(devnull, STDERR_FILENO);
		}
		if (dup2(pfd[1], STDOUT_FILENO) < 0)
			_exit(127);
		/* A descriptor without O_CLOEXEC (the store lock) must not outlive us in the child. */
		close_range(3, ~0u, 0);
		if (strchr(argv[0], '/'))
			execve(argv[0], argv, env);
		else
			execvpe(argv[0], argv, env);
		_exit(127);
	}
	/* Both sides set the group, so that kill(-pid) works whichever runs first. */
	setpgid(pid, pid);
	close(pfd[1]);
	pfd[1] = -1;
	for (;;) {
		struct pollfd p = { .fd = pfd[0], .events = POLLIN };
		long long left = deadline - cvm_now_ms();
		ssize_t k;
		int pr;

		if (left <= 0) {
			r = -ETIMEDOUT;
			goto out;
		}
		pr = poll(&p, 1, (int)(left > 1000000 ? 1000000 : left));
		if (pr < 0 && errno == EINTR)
			continue;
		if (pr < 0) {
			r = -errno;
			goto out;
		}
		if (pr == 0)
			continue;
		k = n + 1 < len ? read(pfd[0], out + n, len - 1 - n) : read(pfd[0], sink, sizeof(sink));
		if (k < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (k < 0) {
			r = -errno;
			goto out;
		}
		if (k == 0)
			break;
		if (n + 1 < len)
			n += (size_t)k;
	}
	out[n] = '\0';
	/* EOF: the child may still hang after closing stdout; the deadline holds. */
	for (;;) {
		pid_t w = waitpid(pid, status, WNOHANG);

		if (w == pid)
			break;
		if (w < 0 && errno != EINTR) {
			r = -errno;
			pid = -1;
			goto out;
		}
		if (cvm_now_ms() >= deadline) {
			r = -ETIMEDOUT;
			goto out;
		}
		nanosleep(&(struct timespec){ .tv_nsec = 10 * 1000 * 1000 }, NULL);
	}
	pid = -1;
out:
	if (pid > 0)
		kill_group(pid);
	if (pfd[1] >= 0)
		close(pfd[1]);
	if (pfd[0] >= 0)
		close(pfd[0]);
	free(env);
	free(var);
	return r;
}

int cvm_proc_exec(char *const argv[])
{
	fflush(NULL);
	execvp(argv[0], argv);
	return -errno;
}
