import { render } from 'solid-js/web'
import { Setup } from './Setup'
import '../page.css'
import './setup.css'

render(() => <Setup />, document.getElementById('root')!)
