// SPDX-License-Identifier: GPL-2.0
/*
 * The few kernel interfaces the vcuda module needs that exist only as C macros or static inline
 * functions, so Rust cannot call them through `kernel::bindings`. Everything else (the driver's
 * logic, the data path, the ioctl ABI) is in the Rust files of this directory.
 *
 * Nothing here owns state except the virtio_driver registration (the driver core needs a
 * `struct virtio_driver` with C callbacks and THIS_MODULE) and the misc device's copy of its file
 * operations (with `.owner = THIS_MODULE`, which the Rust misc device abstraction leaves unset).
 */

#include <linux/fs.h>
#include <linux/miscdevice.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/scatterlist.h>
#include <linux/spinlock.h>
#include <linux/vmalloc.h>
#include <linux/virtio.h>
#include <linux/virtio_config.h>
#include <linux/workqueue.h>

/* Must match protocol/src/virtio.rs (VIRTIO_ID_CUDA, MAX_REQUEST_QUEUES). */
#define VCUDA_VIRTIO_ID 57
#define VCUDA_MAX_QUEUES 16

/* Implemented in Rust (vcuda_main.rs). */
int vcuda_rs_probe(void *ctx, struct virtio_device *vdev);
void vcuda_rs_remove(void *ctx, struct virtio_device *vdev);
void vcuda_rs_vq_done(void *dev, unsigned int index);

/* Called from Rust (declared again in sys.rs). */
int vcuda_glue_register(void *ctx);
void vcuda_glue_unregister(void);
void vcuda_glue_own_fops(struct miscdevice *misc);
int vcuda_glue_find_vqs(struct virtio_device *vdev, unsigned int n, struct virtqueue **vqs);
void vcuda_glue_device_ready(struct virtio_device *vdev);
void vcuda_glue_del_vqs(struct virtio_device *vdev);
void vcuda_glue_set_priv(struct virtio_device *vdev, void *priv);
u32 vcuda_glue_cread32(struct virtio_device *vdev, unsigned int offset);
u64 vcuda_glue_cread64(struct virtio_device *vdev, unsigned int offset);
bool vcuda_glue_has_feature(struct virtio_device *vdev, unsigned int fbit);
unsigned long vcuda_glue_spin_lock_irqsave(spinlock_t *lock);
void vcuda_glue_spin_unlock_irqrestore(spinlock_t *lock, unsigned long flags);
bool vcuda_glue_spin_trylock_irqsave(spinlock_t *lock, unsigned long *flags);
bool vcuda_glue_fatal_signal_pending(void);
u64 vcuda_glue_page_to_phys(struct page *page);
struct page *vcuda_glue_kaddr_to_page(const void *addr);
void vcuda_glue_sg_set_page(struct scatterlist *sg, struct page *page, unsigned int len,
			    unsigned int offset);
struct workqueue_struct *vcuda_glue_alloc_wq(void);
struct page *vcuda_glue_alloc_chunk(unsigned int order);
void *vcuda_glue_page_address(struct page *page);
void *vcuda_glue_charge_pinned(unsigned long npages, int *err);
void vcuda_glue_uncharge_pinned(void *p, unsigned long npages);

/* The Rust module state, set while the driver is registered. */
static void *vcuda_ctx;

static void vcuda_vq_callback(struct virtqueue *vq)
{
	/* vdev->priv is set before the device is made ready and cleared after it is reset. */
	void *dev = vq->vdev->priv;

	if (dev)
		vcuda_rs_vq_done(dev, vq->index);
}

static int vcuda_probe(struct virtio_device *vdev)
{
	return vcuda_rs_probe(vcuda_ctx, vdev);
}

static void vcuda_remove(struct virtio_device *vdev)
{
	vcuda_rs_remove(vcuda_ctx, vdev);
}

static const struct virtio_device_id vcuda_id_table[] = {
	{ VCUDA_VIRTIO_ID, VIRTIO_DEV_ANY_ID },
	{ 0 },
};
MODULE_DEVICE_TABLE(virtio, vcuda_id_table);

static struct virtio_driver vcuda_virtio_driver = {
	.driver.name = "vcuda",
	.id_table = vcuda_id_table,
	.probe = vcuda_probe,
	.remove = vcuda_remove,
};

/* register_virtio_driver() is a macro (it passes THIS_MODULE). */
int vcuda_glue_register(void *ctx)
{
	int err;

	vcuda_ctx = ctx;
	err = register_virtio_driver(&vcuda_virtio_driver);
	if (err)
		vcuda_ctx = NULL;
	return err;
}

void vcuda_glue_unregister(void)
{
	unregister_virtio_driver(&vcuda_virtio_driver);
	vcuda_ctx = NULL;
}

/*
 * The Rust misc device abstraction builds file operations without an owner, so an open file
 * would not pin the module. Give the registered misc device a copy that names THIS_MODULE (a
 * macro): open files then hold a module reference and `rmmod` waits for (refuses while) users.
 * Called right after misc_register(), before the module finishes loading (it cannot be unloaded
 * before that).
 */
static struct file_operations vcuda_fops;

void vcuda_glue_own_fops(struct miscdevice *misc)
{
	vcuda_fops = *misc->fops;
	vcuda_fops.owner = THIS_MODULE;
	misc->fops = &vcuda_fops;
}

/* virtio_find_vqs() and virtio_device_ready() are static inline. */
static const char *const vcuda_vq_names[VCUDA_MAX_QUEUES] = {
	"req0", "req1", "req2",	 "req3",  "req4",  "req5",  "req6",  "req7",
	"req8", "req9", "req10", "req11", "req12", "req13", "req14", "req15",
};

int vcuda_glue_find_vqs(struct virtio_device *vdev, unsigned int n, struct virtqueue **vqs)
{
	struct virtqueue_info info[VCUDA_MAX_QUEUES] = {};
	unsigned int i;

	if (n == 0 || n > VCUDA_MAX_QUEUES)
		return -EINVAL;
	for (i = 0; i < n; i++) {
		info[i].name = vcuda_vq_names[i];
		info[i].callback = vcuda_vq_callback;
	}
	return virtio_find_vqs(vdev, n, vqs, info, NULL);
}

void vcuda_glue_device_ready(struct virtio_device *vdev)
{
	virtio_device_ready(vdev);
}

void vcuda_glue_del_vqs(struct virtio_device *vdev)
{
	vdev->config->del_vqs(vdev);
}

void vcuda_glue_set_priv(struct virtio_device *vdev, void *priv)
{
	WRITE_ONCE(vdev->priv, priv);
}

/* virtio_cread32()/virtio_cread64() are static inline (with the config generation loop). */
u32 vcuda_glue_cread32(struct virtio_device *vdev, unsigned int offset)
{
	return virtio_cread32(vdev, offset);
}

u64 vcuda_glue_cread64(struct virtio_device *vdev, unsigned int offset)
{
	return virtio_cread64(vdev, offset);
}

bool vcuda_glue_has_feature(struct virtio_device *vdev, unsigned int fbit)
{
	return virtio_has_feature(vdev, fbit);
}

/* spin_lock_irqsave()/spin_unlock_irqrestore() are macros. */
unsigned long vcuda_glue_spin_lock_irqsave(spinlock_t *lock)
{
	unsigned long flags;

	spin_lock_irqsave(lock, flags);
	return flags;
}

void vcuda_glue_spin_unlock_irqrestore(spinlock_t *lock, unsigned long flags)
{
	spin_unlock_irqrestore(lock, flags);
}

bool vcuda_glue_spin_trylock_irqsave(spinlock_t *lock, unsigned long *flags)
{
	return spin_trylock_irqsave(lock, *flags);
}

/* fatal_signal_pending() and `current` are static inline / per-CPU macros. */
bool vcuda_glue_fatal_signal_pending(void)
{
	return fatal_signal_pending(current);
}

/* page_to_phys(), virt_to_page() and sg_set_page() are macros / static inline. */
u64 vcuda_glue_page_to_phys(struct page *page)
{
	return page_to_phys(page);
}

struct page *vcuda_glue_kaddr_to_page(const void *addr)
{
	return is_vmalloc_addr(addr) ? vmalloc_to_page(addr) : virt_to_page(addr);
}

void vcuda_glue_sg_set_page(struct scatterlist *sg, struct page *page, unsigned int len,
			    unsigned int offset)
{
	sg_set_page(sg, page, len, offset);
}

/* alloc_workqueue() is a macro. */
struct workqueue_struct *vcuda_glue_alloc_wq(void)
{
	return alloc_workqueue("vcuda", WQ_UNBOUND | WQ_MEM_RECLAIM, 0);
}

/*
 * Bounce chunks: physically contiguous, without retries or allocation-failure warnings (the
 * caller falls back to smaller orders), charged to the caller's memory cgroup. The __GFP_*
 * flags and page_address() are macros.
 */
struct page *vcuda_glue_alloc_chunk(unsigned int order)
{
	return alloc_pages(GFP_KERNEL_ACCOUNT | __GFP_NORETRY | __GFP_NOWARN, order);
}

/*
 * Pinned pages count against the caller's RLIMIT_MEMLOCK (its mm's locked_vm), as VFIO's
 * and RDMA's do; CAP_IPC_LOCK lifts the limit. Returns the mm, referenced, to uncharge
 * later from any context that may sleep; NULL with *err set (-ENOMEM: over the limit).
 */
void *vcuda_glue_charge_pinned(unsigned long npages, int *err)
{
	struct mm_struct *mm = current->mm;
	int r;

	if (!mm) {
		*err = -ESRCH;
		return NULL;
	}
	r = account_locked_vm(mm, npages, true);
	if (r) {
		*err = r;
		return NULL;
	}
	mmgrab(mm);
	return mm;
}

void vcuda_glue_uncharge_pinned(void *p, unsigned long npages)
{
	struct mm_struct *mm = p;

	/* An exited process's counters go with its mm. */
	if (mmget_not_zero(mm)) {
		account_locked_vm(mm, npages, false);
		mmput(mm);
	}
	mmdrop(mm);
}

void *vcuda_glue_page_address(struct page *page)
{
	return page_address(page);
}
