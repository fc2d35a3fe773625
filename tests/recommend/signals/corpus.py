"""Tiny corpora whose lists are small enough to check by hand: one topic (database indexes and
queries) in articles of known dates, and a few of other topics."""

from __future__ import annotations

from typing import Any

from sqlalchemy.orm import Session, sessionmaker

from recengine.config import Settings
from recengine.recommend.live import LiveIndex
from recengine.recommend.related import RelatedArticles

SENTENCES = {
    "index": "数据库索引的设计决定了查询的速度，联合索引要按照最左前缀的顺序来使用。",
    "plan": "执行计划可以看出查询有没有用到索引，慢查询日志记录了耗时很长的语句。",
    "tx": "事务的隔离级别影响并发读写，锁的粒度越细并发能力越强。",
    "cache": "缓存可以挡住大部分读请求，热点数据放在内存里能减轻数据库的压力。",
    "split": "数据量很大的时候要分库分表，分片键的选择决定了数据是否均匀。",
    "java": "线程池的核心线程数和队列长度需要根据任务的类型来配置。",
    "front": "前端组件的渲染性能取决于状态更新的频率和虚拟节点的数量。",
    "ops": "服务器的磁盘告警需要值班人员在十分钟之内处理并记录在案。",
    "a": "周末的篮球比赛吸引了很多观众，主队在最后一节完成了逆转。",
    "b": "这家餐厅的招牌菜是红烧肉，老板每天清晨去市场挑选食材。",
    "c": "春天的公园里开满了樱花，游客们带着相机拍照留念。",
    "d": "新上映的电影讲述了一个宇航员在火星上独自生存的故事。",
    "e": "图书馆延长了开放时间，学生们可以在晚上安静地自习。",
    "f": "地铁新线路开通以后，郊区居民的通勤时间缩短了一半。",
    "g": "山区的茶农在清明前采摘嫩芽，手工炒制的绿茶香气浓郁。",
    "h": "博物馆展出了一批出土的青铜器，铭文记录了当时的祭祀活动。",
}


def text(*keys: str) -> str:
    return "\n".join(SENTENCES[k] for k in keys)


def article(aid: str, keys: tuple[str, ...], when: str | None, **fields: Any) -> dict[str, Any]:
    return {
        "id": aid,
        "title": f"{aid} " + SENTENCES[keys[0]][:8],
        "content": text(*keys),
        "published_at": when,
        "category": "数据库",
        "tags": [],
        **fields,
    }


def with_related(settings: Settings, **values: Any) -> Settings:
    """``settings`` with some ``related`` settings replaced."""
    return settings.model_copy(update={"related": settings.related.model_copy(update=values)})


def service(settings: Settings, factory: sessionmaker[Session]) -> RelatedArticles:
    return RelatedArticles(settings, LiveIndex(settings, factory, background=False))


def ask(related: RelatedArticles, factory: sessionmaker[Session], aid: str, **kw: Any) -> Any:
    with factory() as session:
        return related.related(aid, session=session, **kw)
