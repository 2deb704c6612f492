/* SPDX-License-Identifier: MIT */
/*
 * Parallel .xz decoding with liblzma's block decoder (the only user of
 * liblzma). Why not lzma_stream_decoder_mt: it keeps each block in flight
 * whole in memory twice (compressed input and uncompressed output) besides
 * the dictionary, about 48 MiB a block for xz -6, so two threads need over
 * 100 MiB; and with a single-block file it decodes in the caller's thread,
 * serially with everything the caller does. Here the block the reader is in
 * streams through a few chunks, input is read with pread straight from the
 * file, and only the blocks ahead of the reader are buffered.
 *
 * Threads: workers take blocks in file order. A worker on the head block
 * (the one the reader is in) may hold HEAD_MAX chunks; the others share a
 * budget of chunks sized so that each can buffer one whole block. The head
 * block always progresses, so no budget can deadlock the pipeline.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <lzma.h>

#include "error.h"
#include "xz.h"

enum {
	CHUNK = 1 << 20,	/* output piece handed to the reader */
	INBUF = 256 << 10,	/* pread size of a worker */
	HEAD_MAX = 3,		/* chunks queued for the reader before its worker waits */
	FOLLOW_HEAD_MAX = 8,	/* the same in follow mode */
	MAX_THREADS = 256,
};

/* Refused outright: a block whose decoder needs more (libarchive's limit too). */
#define MEMSTOP ((uint64_t)1 << 30)
/* What is said of bytes after the end of the last whole stream. */
#define APPENDED "data after the end of its xz stream (something was appended to the file)"
/* At most this much buffered per worker ahead of the reader, whatever the block size. */
#define AHEAD_MAX ((uint64_t)256 << 20)

struct chunk {
	struct chunk *next;
	size_t len;
	unsigned char data[CHUNK];
};

struct block {
	uint64_t coff;		/* offset of its header in the file */
	uint64_t total;		/* header + data + padding + check */
	uint64_t unpadded;
	uint64_t usize;
	lzma_check check;
	struct chunk *first, *last;
	size_t held;		/* chunks queued, plus the one being filled */
	bool done;
	int err;
	const char *why;
};

struct cvm_xz {
	int fd;
	uint64_t size;
	struct block *b;
	size_t nb;
	pthread_t tid[MAX_THREADS];
	unsigned started;

	pthread_mutex_t mu;
	pthread_cond_t space;	/* workers wait for room */
	pthread_cond_t data;	/* the reader waits for the head block */
	size_t next;		/* next block to hand out */
	size_t limit;		/* no block after this one is decoded (an error) */
	size_t head;		/* the block being read */
	size_t held_total;
	size_t budget;		/* chunks that blocks after the head may hold */
	size_t head_max;	/* chunks the head block may hold */
	struct chunk *free_list;
	bool abort;

	/* follow mode: the bytes from off that may be read now (xz.h) */
	ssize_t (*gate)(void *arg, uint64_t off, size_t want);
	void *gate_arg;
	uint64_t in_pos;	/* compressed bytes the worker has read (atomic) */

	/* The reader's side (one thread). */
	struct chunk *cur;
	uint64_t done_c;	/* compressed bytes of the blocks read */
	uint64_t head_out;	/* bytes read of the head block */
	int err;
	const char *why;
	char msg[160];

	struct cvm_xz_info info;
};

bool cvm_xz_magic(const void *buf, size_t len)
{
	static const unsigned char magic[6] = { 0xfd, '7', 'z', 'X', 'Z', 0 };

	return len >= sizeof(magic) && memcmp(buf, magic, sizeof(magic)) == 0;
}

uint64_t cvm_xz_default_memlimit(void)
{
	uint64_t m = lzma_physmem() / 16;

	if (m < ((uint64_t)64 << 20))
		m = (uint64_t)64 << 20;
	if (m > ((uint64_t)1 << 30))
		m = (uint64_t)1 << 30;
	return m;
}

static int lzma_code_error(lzma_ret ret, const char **why)
{
	switch (ret) {
	case LZMA_MEM_ERROR:
		*why = "out of memory";
		return -ENOMEM;
	case LZMA_MEMLIMIT_ERROR:
		*why = "it needs more memory to decode than allowed";
		break;
	case LZMA_FORMAT_ERROR:
		*why = "not in the .xz format";
		break;
	case LZMA_OPTIONS_ERROR:
		*why = "unsupported .xz options";
		break;
	case LZMA_DATA_ERROR:
		*why = "xz: compressed data is corrupt";
		break;
	case LZMA_BUF_ERROR:
		*why = "xz: unexpected end of input";
		break;
	default:
		*why = "xz: decoder error";
		break;
	}
	return -CVM_E_CORRUPT;
}

static ssize_t pread_full(int fd, void *buf, size_t len, uint64_t off)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = pread(fd, (char *)buf + done, len - done, (off_t)(off + done));
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			break;
		done += (size_t)n;
	}
	return (ssize_t)done;
}

/* Reads the index of every stream in the file's first size bytes (from their end). */
static int read_index(struct cvm_xz *z, uint64_t size, lzma_index **idx, const char **why)
{
	enum { BUF = 64 << 10 };
	lzma_stream s = LZMA_STREAM_INIT;
	unsigned char *buf = malloc(BUF);
	uint64_t pos = 0;
	lzma_ret ret;
	int r = 0;

	if (!buf)
		return -ENOMEM;
	/* 8 MiB of index is some 500,000 blocks: a real archive has tens. */
	ret = lzma_file_info_decoder(&s, idx, (uint64_t)8 << 20, size);
	if (ret != LZMA_OK) {
		r = lzma_code_error(ret, why);
		goto out;
	}
	for (;;) {
		if (s.avail_in == 0) {
			ssize_t n = pos < size ? pread_full(z->fd, buf, pos + BUF > size ?
							   (size_t)(size - pos) : BUF, pos) : 0;
			if (n < 0) {
				r = (int)n;
				*why = "cannot read it";
				goto out;
			}
			s.next_in = buf;
			s.avail_in = (size_t)n;
			pos += (uint64_t)n;
		}
		ret = lzma_code(&s, s.avail_in ? LZMA_RUN : LZMA_FINISH);
		if (ret == LZMA_STREAM_END)
			break;
		if (ret == LZMA_SEEK_NEEDED) {
			pos = s.seek_pos;
			s.avail_in = 0;
			continue;
		}
		if (ret != LZMA_OK) {
			r = lzma_code_error(ret, why);
			if (ret == LZMA_BUF_ERROR || ret == LZMA_DATA_ERROR)
				*why = "not a complete .xz file (truncated or damaged)";
			goto out;
		}
	}
out:
	lzma_end(&s);
	free(buf);
	return r;
}

/*
 * Whether a whole .xz file ends before the file does: a stream footer ("YZ"
 * at a multiple of 4, its CRC good) within the last 64 MiB, with a good
 * index before it. Only asked once the file failed to read as a whole, to
 * tell what is after the end of the stream (something appended) from a
 * stream cut short or damaged.
 */
static bool ends_early(struct cvm_xz *z)
{
	enum { BUF = 64 << 10, FOOT = LZMA_STREAM_HEADER_SIZE };
	uint64_t lowest = z->size > ((uint64_t)64 << 20) ? z->size - ((uint64_t)64 << 20) : 0;
	unsigned char *buf = malloc(BUF + FOOT);
	uint64_t end = z->size & ~(uint64_t)3;
	bool found = false;

	/* Each footer candidate ends at a multiple of 4, before the file's end. */
	if (end == z->size)
		end -= 4;
	while (buf && !found && end >= 2 * FOOT && end >= lowest) {
		uint64_t from = end - FOOT >= BUF ? end - FOOT - BUF + 4 : 0;
		ssize_t n = pread_full(z->fd, buf, (size_t)(end - from), from);
		if (n != (ssize_t)(end - from))
			break;
		for (uint64_t e = end; !found && e >= from + FOOT && e >= 2 * FOOT; e -= 4) {
			lzma_stream_flags f;
			lzma_index *idx = NULL;
			const char *why;
			const unsigned char *foot = buf + (e - FOOT - from);
			if (foot[FOOT - 2] != 'Y' || foot[FOOT - 1] != 'Z' ||
			    lzma_stream_footer_decode(&f, foot) != LZMA_OK)
				continue;
			found = read_index(z, e, &idx, &why) == 0;
			lzma_index_end(idx, NULL);
		}
		if (from == 0)
			break;
		end = from + FOOT - 4;
	}
	free(buf);
	return found;
}

/* Decoder memory of a block's filters, from its header; 0 when it cannot be read. */
static uint64_t block_memusage(struct cvm_xz *z, const struct block *bl)
{
	lzma_filter filters[LZMA_FILTERS_MAX + 1];
	lzma_block blk = { 0 };
	uint8_t hdr[LZMA_BLOCK_HEADER_SIZE_MAX];
	uint64_t m;

	if (pread_full(z->fd, hdr, 1, bl->coff) != 1 || hdr[0] == 0)
		return 0;
	blk.version = 1;
	blk.check = bl->check;
	blk.filters = filters;
	blk.header_size = lzma_block_header_size_decode(hdr[0]);
	if (pread_full(z->fd, hdr, blk.header_size, bl->coff) != (ssize_t)blk.header_size ||
	    lzma_block_header_decode(&blk, NULL, hdr) != LZMA_OK)
		return 0;
	m = lzma_raw_decoder_memusage(filters);
	lzma_filters_free(filters, NULL);
	return m == UINT64_MAX ? 0 : m;
}

/* Takes a chunk for block k, waiting for room: 0, 1 when the work stops, -ENOMEM. */
static int get_chunk(struct cvm_xz *z, size_t k, struct chunk **out)
{
	struct chunk *c;

	pthread_mutex_lock(&z->mu);
	for (;;) {
		if (z->abort || k > z->limit) {
			pthread_mutex_unlock(&z->mu);
			return 1;
		}
		if (k == z->head ? z->b[k].held < z->head_max
				 : z->held_total - z->b[z->head].held < z->budget)
			break;
		pthread_cond_wait(&z->space, &z->mu);
	}
	c = z->free_list;
	if (c)
		z->free_list = c->next;
	z->b[k].held++;
	z->held_total++;
	pthread_mutex_unlock(&z->mu);
	if (!c) {
		c = malloc(sizeof(*c));
		if (!c) {
			pthread_mutex_lock(&z->mu);
			z->b[k].held--;
			z->held_total--;
			pthread_cond_broadcast(&z->space);
			pthread_mutex_unlock(&z->mu);
			return -ENOMEM;
		}
	}
	c->next = NULL;
	c->len = 0;
	*out = c;
	return 0;
}

/* Queues a filled chunk of block k (NULL or empty: only gives it back). */
static void put_chunk(struct cvm_xz *z, size_t k, struct chunk *c)
{
	pthread_mutex_lock(&z->mu);
	if (c->len) {
		if (z->b[k].last)
			z->b[k].last->next = c;
		else
			z->b[k].first = c;
		z->b[k].last = c;
		if (k == z->head)
			pthread_cond_signal(&z->data);
	} else {
		z->b[k].held--;
		z->held_total--;
		c->next = z->free_list;
		z->free_list = c;
		pthread_cond_broadcast(&z->space);
	}
	pthread_mutex_unlock(&z->mu);
}

/* Decodes block k into its queue: 0, 1 when stopped, or a negative code with *why. */
static int decode_block(struct cvm_xz *z, size_t k, lzma_stream *s, unsigned char *in,
			const char **why)
{
	const struct block *bl = &z->b[k];
	lzma_filter filters[LZMA_FILTERS_MAX + 1];
	lzma_block blk = { 0 };
	uint8_t hdr[LZMA_BLOCK_HEADER_SIZE_MAX];
	struct chunk *c = NULL;
	uint64_t pos, end, mem;
	lzma_ret ret;
	ssize_t n;
	int r = 0;

	n = pread_full(z->fd, hdr, 1, bl->coff);
	if (n != 1 || hdr[0] == 0) {
		*why = n < 0 ? "cannot read it" : "xz: a block header is missing";
		return n < 0 ? (int)n : -CVM_E_CORRUPT;
	}
	blk.version = 1;
	blk.check = bl->check;
	blk.filters = filters;
	blk.header_size = lzma_block_header_size_decode(hdr[0]);
	if (blk.header_size > bl->total) {
		*why = "xz: a block header is damaged";
		return -CVM_E_CORRUPT;
	}
	n = pread_full(z->fd, hdr, blk.header_size, bl->coff);
	if (n != (ssize_t)blk.header_size) {
		*why = n < 0 ? "cannot read it" : "xz: unexpected end of input";
		return n < 0 ? (int)n : -CVM_E_CORRUPT;
	}
	ret = lzma_block_header_decode(&blk, NULL, hdr);
	if (ret != LZMA_OK)
		return lzma_code_error(ret, why);
	/* The header and the index must agree; the decoder then checks the data against both. */
	if (lzma_block_compressed_size(&blk, bl->unpadded) != LZMA_OK ||
	    (blk.uncompressed_size != LZMA_VLI_UNKNOWN && blk.uncompressed_size != bl->usize)) {
		lzma_filters_free(filters, NULL);
		*why = "xz: a block disagrees with the index";
		return -CVM_E_CORRUPT;
	}
	blk.uncompressed_size = bl->usize;
	mem = lzma_raw_decoder_memusage(filters);
	if (mem == UINT64_MAX || mem > MEMSTOP) {
		lzma_filters_free(filters, NULL);
		*why = "xz: a block needs more than 1 GiB of memory to decode";
		return -CVM_E_CORRUPT;
	}
	ret = lzma_block_decoder(s, &blk);
	lzma_filters_free(filters, NULL);
	if (ret != LZMA_OK)
		return lzma_code_error(ret, why);

	pos = bl->coff + blk.header_size;
	end = bl->coff + bl->total;
	s->avail_in = 0;
	for (;;) {
		if (!c) {
			r = get_chunk(z, k, &c);
			if (r < 0)
				*why = "out of memory";
			if (r)
				return r;
		}
		if (s->avail_in == 0 && pos < end) {
			size_t want = end - pos < INBUF ? (size_t)(end - pos) : INBUF;
			n = pread_full(z->fd, in, want, pos);
			if (n < 0) {
				r = (int)n;
				*why = "cannot read it";
				break;
			}
			if ((size_t)n < want) {
				r = -CVM_E_CORRUPT;
				*why = "xz: unexpected end of input";
				break;
			}
			s->next_in = in;
			s->avail_in = (size_t)n;
			pos += (uint64_t)n;
		}
		s->next_out = c->data + c->len;
		s->avail_out = CHUNK - c->len;
		ret = lzma_code(s, pos == end ? LZMA_FINISH : LZMA_RUN);
		c->len = CHUNK - s->avail_out;
		if (ret == LZMA_STREAM_END)
			break;
		if (ret != LZMA_OK) {
			r = lzma_code_error(ret, why);
			break;
		}
		if (c->len == CHUNK) {
			put_chunk(z, k, c);
			c = NULL;
		}
	}
	if (c)
		put_chunk(z, k, c);
	return r;
}

/*
 * After a whole stream in follow mode: skips its padding (zeros, in fours)
 * and starts the decoder on the next stream. 1 when the file ends here, 0
 * to decode on, 2 to read more, or an error (why set).
 */
static int next_stream(lzma_stream *s, bool end, uint64_t *pad, const char **why)
{
	lzma_ret ret;

	while (s->avail_in && *s->next_in == 0) {
		s->next_in++;
		s->avail_in--;
		(*pad)++;
	}
	if (s->avail_in == 0 && !end)
		return 2;
	if (*pad % 4) {
		*why = APPENDED;
		return -CVM_E_CORRUPT;
	}
	if (s->avail_in == 0)
		return 1;
	ret = lzma_stream_decoder(s, MEMSTOP, 0);
	return ret == LZMA_OK ? 0 : lzma_code_error(ret, why);
}

/*
 * Follow mode: decodes the whole file, as it arrives, into block 0's queue
 * (as decode_block). Streams may follow one another with padding between
 * them, as xz -d reads them; anything else after a whole stream was
 * appended to the file, and is said so as cvm_xz_open says it.
 */
static int decode_stream(struct cvm_xz *z, lzma_stream *s, unsigned char *in, const char **why)
{
	struct chunk *c = NULL;
	uint64_t pos = 0, pad = 0, start = 0;
	bool end = false, between = false;
	unsigned char magic[6];
	lzma_ret ret;
	ssize_t n;
	int r = 0;

	/* 1 GiB of memory at most, as for a block. */
	ret = lzma_stream_decoder(s, MEMSTOP, 0);
	if (ret != LZMA_OK)
		return lzma_code_error(ret, why);
	s->avail_in = 0;
	for (;;) {
		if (!c) {
			r = get_chunk(z, 0, &c);
			if (r < 0)
				*why = "out of memory";
			if (r)
				return r;
		}
		if (s->avail_in == 0 && !end) {
			/*
			 * When the gate would wait for the download, what is
			 * decoded so far goes to the reader first: it never
			 * waits for bytes that have arrived.
			 */
			if (c->len && z->gate(z->gate_arg, pos, 0) == 0) {
				put_chunk(z, 0, c);
				c = NULL;
				continue;
			}
			n = z->gate(z->gate_arg, pos, INBUF);
			if (n > 0) {
				size_t want = (size_t)n;
				n = pread_full(z->fd, in, want, pos);
				if (n >= 0 && (size_t)n < want)
					n = -EIO;	/* shorter than the gate said */
			}
			if (n < 0) {
				r = (int)n;
				*why = "cannot read it";
				break;
			}
			end = n == 0;
			s->next_in = in;
			s->avail_in = (size_t)n;
			pos += (uint64_t)n;
			__atomic_store_n(&z->in_pos, pos, __ATOMIC_RELAXED);
		}
		if (between) {
			r = next_stream(s, end, &pad, why);
			if (r == 2)
				continue;
			if (r != 0) {
				r = r == 1 ? 0 : r;
				break;
			}
			between = false;
			start = pos - s->avail_in;
		}
		s->next_out = c->data + c->len;
		s->avail_out = CHUNK - c->len;
		ret = lzma_code(s, end ? LZMA_FINISH : LZMA_RUN);
		c->len = CHUNK - s->avail_out;
		if (ret == LZMA_STREAM_END) {
			between = true;
			pad = 0;
		} else if (ret != LZMA_OK) {
			r = lzma_code_error(ret, why);
			if (ret == LZMA_BUF_ERROR)
				*why = "not a complete .xz file (truncated or damaged)";
			/* After a whole stream, what does not start as one was appended. */
			if (start && (pread_full(z->fd, magic, sizeof(magic), start) != (ssize_t)sizeof(magic) ||
				      !cvm_xz_magic(magic, sizeof(magic))))
				*why = APPENDED;
			break;
		}
		if (c->len == CHUNK) {
			put_chunk(z, 0, c);
			c = NULL;
		}
	}
	if (c)
		put_chunk(z, 0, c);
	return r;
}

static void *worker(void *arg)
{
	struct cvm_xz *z = arg;
	lzma_stream s = LZMA_STREAM_INIT;
	unsigned char *in = malloc(INBUF);
	const char *why = NULL;
	size_t k;
	int r;

	pthread_mutex_lock(&z->mu);
	while (!z->abort && z->next < z->nb && z->next <= z->limit) {
		k = z->next++;
		pthread_mutex_unlock(&z->mu);
		why = "out of memory";
		if (!in)
			r = -ENOMEM;
		else
			r = z->gate ? decode_stream(z, &s, in, &why) : decode_block(z, k, &s, in, &why);
		pthread_mutex_lock(&z->mu);
		z->b[k].done = true;
		if (r < 0) {
			z->b[k].err = r;
			z->b[k].why = why;
			if (k < z->limit)
				z->limit = k;
			pthread_cond_broadcast(&z->space);
		}
		if (k == z->head)
			pthread_cond_signal(&z->data);
	}
	pthread_mutex_unlock(&z->mu);
	lzma_end(&s);
	free(in);
	return NULL;
}

static struct cvm_xz *xz_new(int fd, uint64_t size)
{
	struct cvm_xz *z = calloc(1, sizeof(*z));

	if (!z)
		return NULL;
	z->fd = fd;
	z->size = size;
	pthread_mutex_init(&z->mu, NULL);
	pthread_cond_init(&z->space, NULL);
	pthread_cond_init(&z->data, NULL);
	z->head_max = HEAD_MAX;
	return z;
}

/* Starts n workers: 0, or -EAGAIN when none could be. */
static int start_workers(struct cvm_xz *z, unsigned n, const char **why)
{
	unsigned i;

	for (i = 0; i < n && z->nb; i++) {
		if (pthread_create(&z->tid[i], NULL, worker, z) != 0)
			break;
		z->started++;
	}
	z->info.threads = z->started;
	if (z->nb && !z->started) {
		*why = "cannot start a decoder thread";
		return -EAGAIN;
	}
	return 0;
}

int cvm_xz_open(int fd, uint64_t size, unsigned threads, uint64_t memlimit, struct cvm_xz **out,
		const char **why)
{
	struct cvm_xz *z;
	lzma_index *idx = NULL;
	lzma_index_iter it;
	uint64_t max_usize = 0, dict, per, ahead, need = 0;
	size_t i;
	unsigned n;
	int r;

	*why = "out of memory";
	z = xz_new(fd, size);
	if (!z)
		return -ENOMEM;
	r = read_index(z, z->size, &idx, why);
	if (r == -CVM_E_CORRUPT && ends_early(z))
		*why = APPENDED;
	if (r < 0)
		goto fail;
	z->nb = (size_t)lzma_index_block_count(idx);
	z->b = calloc(z->nb ? z->nb : 1, sizeof(*z->b));
	if (!z->b) {
		r = -ENOMEM;
		goto fail;
	}
	lzma_index_iter_init(&it, idx);
	for (i = 0; i < z->nb && !lzma_index_iter_next(&it, LZMA_INDEX_ITER_BLOCK); i++) {
		struct block *bl = &z->b[i];
		bl->coff = it.block.compressed_file_offset;
		bl->total = it.block.total_size;
		bl->unpadded = it.block.unpadded_size;
		bl->usize = it.block.uncompressed_size;
		bl->check = it.stream.flags->check;
		if (bl->usize > max_usize)
			max_usize = bl->usize;
	}
	z->info.blocks = z->nb;
	z->info.uncompressed = lzma_index_uncompressed_size(idx);
	lzma_index_end(idx, NULL);
	idx = NULL;
	z->limit = z->nb ? z->nb - 1 : 0;

	/*
	 * Threads: each needs its dictionary and buffers, and each beyond the
	 * first one block (at most AHEAD_MAX) buffered ahead of the reader.
	 */
	z->info.memlimit = memlimit ? memlimit : cvm_xz_default_memlimit();
	dict = z->nb ? block_memusage(z, &z->b[0]) : 0;
	if (!dict)
		dict = (uint64_t)64 << 20;	/* unknown: assume xz -9 */
	per = dict + INBUF + CHUNK;
	ahead = max_usize < AHEAD_MAX ? max_usize : AHEAD_MAX;
	ahead = (ahead + CHUNK - 1) / CHUNK;
	n = threads ? threads : 1;
	if (n > MAX_THREADS)
		n = MAX_THREADS;
	if (n > z->nb)
		n = z->nb ? (unsigned)z->nb : 1;
	for (; n >= 1; n--) {
		need = n * per + (n - 1) * ahead * CHUNK + (HEAD_MAX + 1) * (uint64_t)CHUNK;
		if (n == 1 || need <= z->info.memlimit)
			break;
	}
	/* One worker: room to start the next block while the reader finishes this one. */
	z->budget = n > 1 ? (size_t)((n - 1) * ahead) : HEAD_MAX;
	z->info.memory = need;
	r = start_workers(z, n, why);
	if (r < 0)
		goto fail;
	*out = z;
	return 0;
fail:
	if (idx)
		lzma_index_end(idx, NULL);
	cvm_xz_free(z);
	return r;
}

int cvm_xz_follow(int fd, ssize_t (*gate)(void *arg, uint64_t off, size_t want), void *arg,
		  struct cvm_xz **out, const char **why)
{
	struct cvm_xz *z;
	int r;

	*why = "out of memory";
	z = xz_new(fd, 0);
	if (z)
		z->b = calloc(1, sizeof(*z->b));
	if (!z || !z->b) {
		cvm_xz_free(z);
		return -ENOMEM;
	}
	z->gate = gate;
	z->gate_arg = arg;
	z->nb = 1;
	/* Chunks are cut short where the download is waited for: room for more of them. */
	z->head_max = FOLLOW_HEAD_MAX;
	z->info.memory = (uint64_t)(FOLLOW_HEAD_MAX + 1) * CHUNK + INBUF;
	r = start_workers(z, 1, why);
	if (r < 0) {
		cvm_xz_free(z);
		return r;
	}
	*out = z;
	return 0;
}

static void release_cur(struct cvm_xz *z)
{
	if (!z->cur)
		return;
	z->cur->next = z->free_list;
	z->free_list = z->cur;
	z->cur = NULL;
}

ssize_t cvm_xz_read(struct cvm_xz *z, const void **buf)
{
	struct block *bl;
	struct chunk *c;

	if (z->err)
		return z->err;
	pthread_mutex_lock(&z->mu);
	release_cur(z);
	for (;;) {
		if (z->head >= z->nb) {
			pthread_mutex_unlock(&z->mu);
			return 0;
		}
		bl = &z->b[z->head];
		if (bl->first) {
			c = bl->first;
			bl->first = c->next;
			if (!bl->first)
				bl->last = NULL;
			bl->held--;
			z->held_total--;
			z->cur = c;
			z->head_out += c->len;
			pthread_cond_broadcast(&z->space);
			pthread_mutex_unlock(&z->mu);
			*buf = c->data;
			return (ssize_t)c->len;
		}
		if (bl->done) {
			if (bl->err) {
				z->err = bl->err;
				z->why = bl->why;
				z->abort = true;
				pthread_cond_broadcast(&z->space);
				pthread_mutex_unlock(&z->mu);
				return z->err;
			}
			if (!z->gate && z->head_out != bl->usize) {
				z->err = -CVM_E_CORRUPT;
				z->why = "xz: a block decoded to a size other than its index says";
				pthread_mutex_unlock(&z->mu);
				return z->err;
			}
			z->done_c += bl->total;
			z->head_out = 0;
			z->head++;
			pthread_cond_broadcast(&z->space);
			continue;
		}
		pthread_cond_wait(&z->data, &z->mu);
	}
}

const char *cvm_xz_strerror(const struct cvm_xz *z)
{
	if (z->why)
		return z->why;
	return z->err ? cvm_strerror(-z->err) : "no error";
}

uint64_t cvm_xz_position(const struct cvm_xz *z)
{
	const struct block *bl;

	if (z->gate)
		return __atomic_load_n(&z->in_pos, __ATOMIC_RELAXED);
	if (z->head >= z->nb)
		return z->size;
	bl = &z->b[z->head];
	return z->done_c + (bl->usize ? (uint64_t)((double)z->head_out / (double)bl->usize *
						   (double)bl->total) : 0);
}

void cvm_xz_get_info(const struct cvm_xz *z, struct cvm_xz_info *info)
{
	*info = z->info;
}

void cvm_xz_free(struct cvm_xz *z)
{
	struct chunk *c;
	size_t i;
	unsigned t;

	if (!z)
		return;
	pthread_mutex_lock(&z->mu);
	z->abort = true;
	pthread_cond_broadcast(&z->space);
	pthread_mutex_unlock(&z->mu);
	for (t = 0; t < z->started; t++)
		pthread_join(z->tid[t], NULL);
	release_cur(z);
	for (i = 0; z->b && i < z->nb; i++) {
		while ((c = z->b[i].first)) {
			z->b[i].first = c->next;
			free(c);
		}
	}
	while ((c = z->free_list)) {
		z->free_list = c->next;
		free(c);
	}
	free(z->b);
	pthread_cond_destroy(&z->data);
	pthread_cond_destroy(&z->space);
	pthread_mutex_destroy(&z->mu);
	free(z);
}
